"""What a reconcile ends with: the status to write (only when it changed), the memory for the
next round, and when to look at the job again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from controller.job.decide.model import Plan
from controller.job.decide.statuscodec import Counters, encode
from controller.job.decide.steps import Draft, JobRound
from shared import labels
from shared.models import JobPhase
from shared.wire import WireObject

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
    return blocked.blocked_reason(
        missing_pvcs=list(draft.missing_pvcs),
        queue=facts,
        pod_group=steps.pod_group_usable(seen, draft),
        pods=[p.wire for p in seen.pods if steps.live(draft, p)],
        native_pod_groups=seen.observed.native_pod_groups,
    )


def blocked_recheck(seen: JobRound, found: blocked.Blocked | None) -> timedelta | None:
    """When to look again at a job the scheduler does not admit: no Queue change would bring
    it when Queues are not watched."""
    if found is None or found.reason not in blocked.NOT_ADMITTED or seen.settings.queue_watched:
        return None
    return BLOCKED_RECHECK


def lifecycle_fields(seen: JobRound, draft: Draft, found: blocked.Blocked | None) -> dict[str, Any]:
    """vcjob's own status fields: the run clock, restart counts by cause, the attempts, the
    typed conditions and `reason`. Volcano's fields are left as they are."""
    s = draft.status
    when = status_mod.rfc3339(seen.now)
    inherited = takeover.inherited(s.attempts, s.initial_phase)
    clock = deadline.advance(
        s.clock,
        running=s.phase == JobPhase.RUNNING,
        suspended=suspension.clock_paused(seen.job, s.phase),
        now=seen.now,
        ran_since=takeover.first_run(s.conditions, seen.pod_objects) if inherited else None,
    )
    runs: Sequence[Mapping[str, Any]] = s.attempts
    if not runs:
        began = (
            takeover.attempt_start(seen.raw_job, seen.pod_objects, s.retry_count, seen.now)
            if inherited
            else seen.now
        )
        runs = attempts.start([], status_mod.rfc3339(began))
    if s.phase in state.TERMINAL:
        runs = attempts.end(
            runs,
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
        blocked=found,
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
        **clock.to_status(),
        "restartCounts": {
            "application": s.restart_counts.get("application", 0),
            "infrastructure": s.restart_counts.get("infrastructure", 0),
            "operator": s.restart_counts.get("operator", 0),
        },
        "attempts": list(runs),
        "typedConditions": typed,
        "reason": typedconditions.status_reason(typed),
    }


def finalize(seen: JobRound, draft: Draft) -> Plan:
    """The last draft composed into the plan: the status to write (only when it changed), the
    memory for the next round, when to look again."""
    read = dict(seen.raw_job.get("status") or {})
    counters = Counters(
        tally=steps.tally(seen, draft),
        min_available=podgroup.job_min_available(seen.job),
        succeeded=steps.succeeded_now(seen, draft),
    )
    found = blocked_reason(seen, draft)
    new_status = encode(read, draft.status, counters, lifecycle_fields(seen, draft, found))
    waits = list(draft.effects.requeue)
    if (recheck := blocked_recheck(seen, found)) is not None:
        waits.append(recheck)
    written: WireObject | None = None
    changes: dict[str, Any] = {}
    dropped = [] if draft.timers else [memory.TIMERS]
    if draft.timers:
        changes[memory.TIMERS] = timers_mod.encode(draft.timers)
    unchanged = status_mod.unchanged(read, new_status)
    # A change that only reports may wait for the next write (typedconditions.report_wait).
    due = status_mod.parse_time(memory.report_due(draft.memory))
    wait = None if unchanged else typedconditions.report_wait(read, new_status, due, seen.now)
    if wait is None:
        written = None if unchanged else new_status
        dropped.append(memory.REPORT_DUE)
    else:
        changes[memory.REPORT_DUE] = (due or seen.now + wait).isoformat()
        waits.append(wait)
    next_fire = timers_mod.next_fire(draft.timers)
    if next_fire is not None:
        waits.append(max(next_fire - seen.now, timedelta(0)))
    remembered = memory.updated(draft.memory, changes, dropped)
    return compose(draft.effects, draft.guard_uid, written, remembered, min(waits, default=None))


def compose(
    effects: steps.Effects,
    guard_uid: str | None,
    status: WireObject | None,
    remembered: memory.Memory,
    requeue_after: timedelta | None,
) -> Plan:
    """The one place the plan is made: what the concerns asked of the API, the status and the
    memory the round ends with."""
    return Plan(
        annotate_out_of_sync=list(effects.annotate_out_of_sync),
        delete=list(effects.delete),
        create=list(effects.create),
        update=list(effects.update),
        job_spec_patch={"spec": dict(effects.spec)} if effects.spec else None,
        status=status,
        events=list(effects.events),
        delete_commands=list(effects.delete_commands),
        delete_job=effects.delete_job,
        requeue_after=requeue_after,
        memory=dict(remembered),
        workload_status=effects.workload_status,
        adopt_workload=effects.adopt_workload,
        guard_uid=guard_uid,
    )
