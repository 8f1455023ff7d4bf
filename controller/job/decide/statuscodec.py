"""The job's status as the planner reads and writes it: decoded from `shared.models.JobStatus`
into a frozen `StatusDraft` (each change makes a new one), and encoded back over the status it
read.

Encoding starts from the status as read, so fields the controller does not own stay; Volcano's
counters are rewritten every time; `state` keeps a reason or message this round left unset;
vcjob's lifecycle fields (docs/lifecycle.md) are removed when they have no value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from controller.job.decide import deadline, restarts, state
from controller.job.decide import status as status_mod
from shared.models import JobPhase
from shared.models.job import JobCondition, JobState, JobStatus, TaskState

EMPTY: Mapping[str, Any] = MappingProxyType({})


class StatusDraft(NamedTuple):
    """The status fields one reconcile decides, starting from what the API holds. A value: a
    step that changes it returns a new one (`_replace`)."""

    initial_phase: JobPhase | None
    phase: JobPhase
    reason: str | None = None
    message: str | None = None
    last_transition: str | None = None
    conditions: tuple[Mapping[str, Any], ...] = ()
    running_duration: str | None = None
    version: int = 0
    retry_count: int = 0
    controlled: Mapping[str, str] = EMPTY
    restart: restarts.RestartRecord | None = None
    # Per task, the indexes whose pod succeeded (kept when the pod is deleted: difference 8).
    recorded_succeeded: Mapping[str, frozenset[int]] = EMPTY
    restart_counts: Mapping[str, int] = EMPTY
    attempts: tuple[Mapping[str, Any], ...] = ()
    clock: deadline.RunClock = deadline.RunClock(None, 0, None)
    typed_conditions: tuple[Mapping[str, Any], ...] = ()


def decode(status: JobStatus | None) -> StatusDraft:
    read = status or JobStatus()
    initial = state.parse_phase(read.state.phase)
    controlled = dict(read.controlled_resources or {})
    counts = read.restart_counts
    return StatusDraft(
        initial_phase=initial,
        phase=initial or JobPhase.PENDING,
        reason=read.state.reason,
        message=read.state.message,
        last_transition=read.state.last_transition_time,
        conditions=tuple(c.to_wire() for c in read.conditions or []),
        running_duration=read.running_duration,
        version=read.version,
        retry_count=read.retry_count,
        controlled=controlled,
        restart=restarts.decode(controlled.get(restarts.RECORD_KEY)),
        recorded_succeeded={
            task: frozenset(done)
            for task, done in status_mod.parse_succeeded_indexes(read.succeeded_indexes).items()
        },
        restart_counts=(
            {k: int(v) for k, v in counts.to_wire().items()} if counts is not None else {}
        ),
        attempts=tuple(a.to_wire() for a in read.attempts or []),
        clock=deadline.RunClock(
            status_mod.parse_time(read.start_time),
            int(read.suspended_seconds or 0),
            status_mod.parse_time(read.suspended_since),
        ),
        typed_conditions=tuple(c.to_wire() for c in read.typed_conditions or []),
    )


@dataclass(frozen=True)
class Counters:
    """Volcano's counters, from the pods after this plan."""

    tally: status_mod.PodTally
    min_available: int
    succeeded: Mapping[str, frozenset[int]]


def encode(
    read: Mapping[str, Any],
    draft: StatusDraft,
    counters: Counters,
    lifecycle: Mapping[str, Any],
) -> dict[str, Any]:
    """The status to write: `read` (the status as read, wire form) with the decided fields."""
    tally = counters.tally
    running_duration = status_mod.running_duration_written(draft.phase, draft.running_duration)
    # A shallow copy: every field written below is replaced whole, never changed in place, so
    # the fields kept as read (the cached Job's) are shared, not copied.
    new_status = dict(read)
    new_state = dict(new_status.get("state") or {})
    decided_state = JobState(
        phase=draft.phase.value,
        reason=draft.reason,
        message=draft.message,
        last_transition_time=draft.last_transition,
    )
    new_state.update(decided_state.to_wire())
    new_status["state"] = new_state
    decided = JobStatus(
        min_available=counters.min_available,
        pending=tally.pending,
        running=tally.running,
        succeeded=tally.succeeded,
        failed=tally.failed,
        terminating=tally.terminating,
        unknown=tally.unknown,
        version=draft.version,
        retry_count=draft.retry_count,
        task_status_count={
            task: TaskState.from_wire(count) for task, count in tally.task_status_count().items()
        },
        succeeded_indexes=status_mod.render_succeeded_indexes(counters.succeeded),
        controlled_resources=dict(sorted(draft.controlled.items())),
        conditions=[JobCondition.from_wire(c) for c in draft.conditions],
        running_duration=running_duration,
    )
    wire = decided.to_wire()
    wire.pop("state", None)
    new_status.update(wire)
    if running_duration is None:
        new_status.pop("runningDuration", None)
    for key, value in lifecycle.items():
        if value is None:
            new_status.pop(key, None)
        else:
            new_status[key] = value
    return new_status
