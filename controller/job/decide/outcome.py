"""What a reconcile ends with: the status to write (only when it changed), the memory for the
next round, and when to look at the job again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controller.job.decide import (
    attempts,
    blocked,
    deadline,
    draft,
    memory,
    phasesync,
    podgroup,
    podview,
    state,
    suspension,
    takeover,
    typedconditions,
)
from controller.job.decide import status as status_mod
from controller.job.decide import timers as timers_mod
from controller.job.decide.draft import Draft, JobRound
from controller.job.decide.statuscodec import Counters, encode
from shared import labels
from shared.models import JobPhase

# A job the scheduler does not admit is looked at again this often when Queues are not watched.
BLOCKED_RECHECK = timedelta(seconds=10)


def blocked_reason(r: JobRound, d: Draft) -> blocked.Blocked | None:
    if d.status.phase != JobPhase.PENDING:
        return None
    queue_name = r.job.spec.queue or labels.DEFAULT_QUEUE
    if r.observed.queue_looked_up:
        queue_obj = r.observed.queue
        facts = blocked.QueueFacts(
            queue_name,
            found=queue_obj is not None,
            state=((queue_obj or {}).get("status") or {}).get("state"),
        )
    else:
        facts = blocked.QueueFacts(queue_name)
    found = blocked.blocked_reason(
        missing_pvcs=d.missing_pvcs,
        queue=facts,
        pod_group=draft.pod_group_usable(r, d),
        pods=[p.wire for p in r.pods if draft.live(d, p)],
        native_pod_groups=r.observed.native_pod_groups,
    )
    if found is not None and found.reason in blocked.NOT_ADMITTED and not r.settings.queue_watched:
        d.requeue.append(BLOCKED_RECHECK)  # no Queue change would bring the job
    return found


def lifecycle_fields(r: JobRound, d: Draft) -> dict[str, Any]:
    """vcjob's own status fields: the run clock, restart counts by cause, the attempts, the
    typed conditions and `reason`. Volcano's fields are left as they are."""
    s = d.status
    when = status_mod.rfc3339(r.now)
    inherited = takeover.inherited(s.attempts, s.initial_phase)
    s.clock = deadline.advance(
        s.clock,
        running=s.phase == JobPhase.RUNNING,
        suspended=suspension.clock_paused(r.job, s.phase),
        now=r.now,
        ran_since=takeover.first_run(s.conditions, r.pod_objects) if inherited else None,
    )
    if not s.attempts:
        began = (
            takeover.attempt_start(r.raw_job, r.pod_objects, s.retry_count, r.now)
            if inherited
            else r.now
        )
        s.attempts = attempts.start([], status_mod.rfc3339(began))
    if s.phase in state.TERMINAL:
        s.attempts = attempts.end(
            s.attempts,
            s.last_transition or when,
            cause=None,
            reason=s.reason or s.phase.value,
            failed=attempts.failed_pods(r.pod_objects),
        )
    facts = typedconditions.JobFacts(
        phase=s.phase,
        reason=s.reason,
        message=s.message,
        pod_group_phase=podgroup.phase_of(draft.pod_group_usable(r, d)) or None,
        blocked=blocked_reason(r, d),
        generation=int(podview.metadata(r.raw_job).get("generation") or 0),
    )
    typed = typedconditions.merged(s.typed_conditions, facts, when)
    typed = suspension.suspended_conditions(
        typed,
        suspended=r.suspended and s.phase not in state.TERMINAL,
        message=phasesync.suspended_message(r)
        if r.suspended
        else "spec.suspend is false: the job runs",
        now=when,
        generation=podview.metadata(r.raw_job).get("generation"),
    )
    return {
        **s.clock.to_status(),
        "restartCounts": {
            "application": s.restart_counts.get("application", 0),
            "infrastructure": s.restart_counts.get("infrastructure", 0),
            "operator": s.restart_counts.get("operator", 0),
        },
        "attempts": s.attempts,
        "typedConditions": typed,
        "reason": typedconditions.status_reason(typed),
    }


def finalize(r: JobRound, d: Draft) -> None:
    read = dict(r.raw_job.get("status") or {})
    counters = Counters(
        tally=draft.tally(r, d),
        min_available=podgroup.job_min_available(r.job),
        succeeded=draft.succeeded_now(r, d),
    )
    new_status = encode(read, d.status, counters, lifecycle_fields(r, d))
    unchanged = status_mod.unchanged(read, new_status)
    if not unchanged:
        # A change that only reports may wait for the next write (typedconditions.report_wait).
        due = status_mod.parse_time(d.memory.get(memory.REPORT_DUE))
        wait = typedconditions.report_wait(read, new_status, due, r.now)
        if wait is None:
            d.plan.status = new_status
        else:
            d.memory[memory.REPORT_DUE] = (due or r.now + wait).isoformat()
            d.requeue.append(wait)
    if d.plan.status is not None or unchanged:
        d.memory.pop(memory.REPORT_DUE, None)

    if d.timers:
        d.memory["timers"] = timers_mod.encode(d.timers)
    else:
        d.memory.pop(memory.TIMERS, None)
    d.plan.memory = dict(d.memory)
    waits = list(d.requeue)
    next_fire = timers_mod.next_fire(d.timers)
    if next_fire is not None:
        waits.append(max(next_fire - r.now, timedelta(0)))
    if waits:
        d.plan.requeue_after = min(waits)
