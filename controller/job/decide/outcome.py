"""What a reconcile ends with: the status to write (only when it changed), the memory for the
next round, and when to look at the job again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controller.job.decide import (
    attempts,
    blocked,
    deadline,
    memory,
    phasesync,
    podgroup,
    podview,
    state,
    steps,
    suspension,
    takeover,
    typedconditions,
)
from controller.job.decide import status as status_mod
from controller.job.decide import timers as timers_mod
from controller.job.decide.statuscodec import Counters, encode
from controller.job.decide.steps import Draft, JobRound
from shared import labels
from shared.models import JobPhase

# A job the scheduler does not admit is looked at again this often when Queues are not watched.
BLOCKED_RECHECK = timedelta(seconds=10)


def blocked_reason(seen: JobRound, draft: Draft) -> blocked.Blocked | None:
    if draft.status.phase != JobPhase.PENDING:
        return None
    queue_name = seen.job.spec.queue or labels.DEFAULT_QUEUE
    if seen.observed.queue_looked_up:
        queue_obj = seen.observed.queue
        facts = blocked.QueueFacts(
            queue_name,
            found=queue_obj is not None,
            state=((queue_obj or {}).get("status") or {}).get("state"),
        )
    else:
        facts = blocked.QueueFacts(queue_name)
    found = blocked.blocked_reason(
        missing_pvcs=draft.missing_pvcs,
        queue=facts,
        pod_group=steps.pod_group_usable(seen, draft),
        pods=[p.wire for p in seen.pods if steps.live(draft, p)],
        native_pod_groups=seen.observed.native_pod_groups,
    )
    if (
        found is not None
        and found.reason in blocked.NOT_ADMITTED
        and not seen.settings.queue_watched
    ):
        draft.requeue.append(BLOCKED_RECHECK)  # no Queue change would bring the job
    return found


def lifecycle_fields(seen: JobRound, draft: Draft) -> dict[str, Any]:
    """vcjob's own status fields: the run clock, restart counts by cause, the attempts, the
    typed conditions and `reason`. Volcano's fields are left as they are."""
    s = draft.status
    when = status_mod.rfc3339(seen.now)
    inherited = takeover.inherited(s.attempts, s.initial_phase)
    s.clock = deadline.advance(
        s.clock,
        running=s.phase == JobPhase.RUNNING,
        suspended=suspension.clock_paused(seen.job, s.phase),
        now=seen.now,
        ran_since=takeover.first_run(s.conditions, seen.pod_objects) if inherited else None,
    )
    if not s.attempts:
        began = (
            takeover.attempt_start(seen.raw_job, seen.pod_objects, s.retry_count, seen.now)
            if inherited
            else seen.now
        )
        s.attempts = attempts.start([], status_mod.rfc3339(began))
    if s.phase in state.TERMINAL:
        s.attempts = attempts.end(
            s.attempts,
            s.last_transition or when,
            cause=None,
            reason=s.reason or s.phase.value,
            failed=attempts.failed_pods(seen.pod_objects),
        )
    facts = typedconditions.JobFacts(
        phase=s.phase,
        reason=s.reason,
        message=s.message,
        pod_group_phase=podgroup.phase_of(steps.pod_group_usable(seen, draft)) or None,
        blocked=blocked_reason(seen, draft),
        generation=int(podview.metadata(seen.raw_job).get("generation") or 0),
    )
    typed = typedconditions.merged(s.typed_conditions, facts, when)
    typed = suspension.suspended_conditions(
        typed,
        suspended=seen.suspended and s.phase not in state.TERMINAL,
        message=phasesync.suspended_message(seen)
        if seen.suspended
        else "spec.suspend is false: the job runs",
        now=when,
        generation=podview.metadata(seen.raw_job).get("generation"),
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


def finalize(seen: JobRound, draft: Draft) -> None:
    read = dict(seen.raw_job.get("status") or {})
    counters = Counters(
        tally=steps.tally(seen, draft),
        min_available=podgroup.job_min_available(seen.job),
        succeeded=steps.succeeded_now(seen, draft),
    )
    new_status = encode(read, draft.status, counters, lifecycle_fields(seen, draft))
    unchanged = status_mod.unchanged(read, new_status)
    if not unchanged:
        # A change that only reports may wait for the next write (typedconditions.report_wait).
        due = status_mod.parse_time(draft.memory.get(memory.REPORT_DUE))
        wait = typedconditions.report_wait(read, new_status, due, seen.now)
        if wait is None:
            draft.plan.status = new_status
        else:
            draft.memory[memory.REPORT_DUE] = (due or seen.now + wait).isoformat()
            draft.requeue.append(wait)
    if draft.plan.status is not None or unchanged:
        draft.memory.pop(memory.REPORT_DUE, None)

    if draft.timers:
        draft.memory["timers"] = timers_mod.encode(draft.timers)
    else:
        draft.memory.pop(memory.TIMERS, None)
    draft.plan.memory = dict(draft.memory)
    waits = list(draft.requeue)
    next_fire = timers_mod.next_fire(draft.timers)
    if next_fire is not None:
        waits.append(max(next_fire - seen.now, timedelta(0)))
    if waits:
        draft.plan.requeue_after = min(waits)
