"""The job phase machine: what an action does in each phase, and the count-driven transitions.

Actions are looked up in `TRANSITIONS`; a (phase, action) pair that is not in the table does not
move the job (the phase's normal sync runs instead). Count-driven transitions (Pending → Running,
Running → Completing/Failed, …) are pure functions over `PodCounts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from shared.models import JobPhase, PolicyAction


class Kill(StrEnum):
    """Which pods an action deletes."""

    NOTHING = "Nothing"
    # Every pod; on the last allowed retry Succeeded and Failed pods are kept (their logs survive).
    ALL = "All"
    # The targeted task's pods (Succeeded included) or the targeted pods.
    TARGET = "Target"
    # Pending, running and unknown pods; finished pods are kept.
    UNFINISHED = "Unfinished"
    # Everything but Succeeded pods: a resumed job keeps its finished work and reruns the rest.
    NOT_SUCCEEDED = "NotSucceeded"


@dataclass(frozen=True)
class Transition:
    to: JobPhase
    kill: Kill
    counts_retry: bool = False
    bump_version: bool = False


_RESTART_JOB: Final = Transition(
    JobPhase.RESTARTING, Kill.ALL, counts_retry=True, bump_version=True
)
_RESTART_TARGET: Final = Transition(JobPhase.RESTARTING, Kill.TARGET, counts_retry=True)
_ABORT: Final = Transition(JobPhase.ABORTING, Kill.UNFINISHED)
_TERMINATE: Final = Transition(JobPhase.TERMINATING, Kill.UNFINISHED)
_COMPLETE: Final = Transition(JobPhase.COMPLETING, Kill.UNFINISHED)
# Resuming is not a failure: no retry is consumed (difference 5). Succeeded pods stay (their work is
# kept), failed ones run again; the version moves on so old pod events are only a sync.
_RESUME: Final = Transition(JobPhase.RESTARTING, Kill.NOT_SUCCEEDED, bump_version=True)

TRANSITIONS: Final[Mapping[tuple[JobPhase, PolicyAction], Transition]] = {
    (JobPhase.PENDING, PolicyAction.RESTART_JOB): _RESTART_JOB,
    (JobPhase.PENDING, PolicyAction.RESTART_TASK): _RESTART_TARGET,
    (JobPhase.PENDING, PolicyAction.RESTART_POD): _RESTART_TARGET,
    (JobPhase.PENDING, PolicyAction.RESTART_PARTITION): _RESTART_TARGET,
    (JobPhase.PENDING, PolicyAction.ABORT_JOB): _ABORT,
    (JobPhase.PENDING, PolicyAction.TERMINATE_JOB): _TERMINATE,
    (JobPhase.PENDING, PolicyAction.COMPLETE_JOB): _COMPLETE,
    (JobPhase.RUNNING, PolicyAction.RESTART_JOB): _RESTART_JOB,
    (JobPhase.RUNNING, PolicyAction.RESTART_TASK): _RESTART_TARGET,
    (JobPhase.RUNNING, PolicyAction.RESTART_POD): _RESTART_TARGET,
    (JobPhase.RUNNING, PolicyAction.RESTART_PARTITION): _RESTART_TARGET,
    (JobPhase.RUNNING, PolicyAction.ABORT_JOB): _ABORT,
    (JobPhase.RUNNING, PolicyAction.TERMINATE_JOB): _TERMINATE,
    (JobPhase.RUNNING, PolicyAction.COMPLETE_JOB): _COMPLETE,
    # difference 3: a restarting job can still be aborted, terminated or completed.
    (JobPhase.RESTARTING, PolicyAction.ABORT_JOB): _ABORT,
    (JobPhase.RESTARTING, PolicyAction.TERMINATE_JOB): _TERMINATE,
    (JobPhase.RESTARTING, PolicyAction.COMPLETE_JOB): _COMPLETE,
    (JobPhase.ABORTING, PolicyAction.RESUME_JOB): _RESUME,
    (JobPhase.ABORTED, PolicyAction.RESUME_JOB): _RESUME,
}

# Phases that wait for their killed pods to disappear, and where they end up.
DRAINING: Final[Mapping[JobPhase, JobPhase]] = {
    JobPhase.ABORTING: JobPhase.ABORTED,
    JobPhase.COMPLETING: JobPhase.COMPLETED,
    JobPhase.TERMINATING: JobPhase.TERMINATED,
}
TERMINAL: Final = frozenset({JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED})
# Phases in which pods are created and policies act.
ACTIVE: Final = frozenset({JobPhase.PENDING, JobPhase.RUNNING})

# When several actions are due in one reconcile, the most decisive one runs.
ACTION_RANK: Final[Mapping[PolicyAction, int]] = {
    PolicyAction.TERMINATE_JOB: 6,
    PolicyAction.ABORT_JOB: 5,
    PolicyAction.COMPLETE_JOB: 4,
    PolicyAction.RESTART_JOB: 3,
    PolicyAction.RESTART_TASK: 2,
    PolicyAction.RESTART_PARTITION: 2,
    PolicyAction.RESTART_POD: 1,
    PolicyAction.RESUME_JOB: 0,
}


def transition_for(phase: JobPhase, action: PolicyAction) -> Transition | None:
    return TRANSITIONS.get((phase, action))


def parse_phase(raw: str | None) -> JobPhase | None:
    """The phase of a status; None for a job never reconciled (empty phase)."""
    if not raw:
        return None
    try:
        return JobPhase(raw)
    except ValueError:
        return None


def is_last_retry(retry_count: int, max_retry: int) -> bool:
    """The restart about to happen is the last one allowed (Volcano: retryCount >= maxRetry-1)."""
    return retry_count >= max_retry - 1


def retries_exhausted(retry_count: int, max_retry: int) -> bool:
    """Restarting → Failed. A resumed job (retryCount 0, maxRetry 0) has consumed nothing."""
    return retry_count > 0 and retry_count >= max_retry


@dataclass(frozen=True)
class PodCounts:
    """Pod counts the transitions look at. `succeeded` includes recorded succeeded indexes whose
    pod was deleted (difference 8): such a slot is done and is not recreated."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed

    @property
    def active(self) -> int:
        return self.pending + self.running + self.terminating + self.unknown


@dataclass(frozen=True)
class Outcome:
    to: JobPhase
    reason: str
    message: str


def pending_outcome(counts: PodCounts, min_available: int) -> Outcome | None:
    """Pending → Running once minAvailable pods run or finished (finished pods count)."""
    started = counts.running + counts.succeeded + counts.failed
    if started >= min_available:
        return Outcome(
            JobPhase.RUNNING,
            "MinAvailableRunning",
            f"{started} pods are running or finished, minAvailable is {min_available}",
        )
    return None


@dataclass(frozen=True)
class TaskFinish:
    name: str
    replicas: int
    min_available: int | None
    succeeded: int


def running_outcome(
    counts: PodCounts,
    *,
    total_replicas: int,
    min_available: int,
    min_success: int | None,
    tasks: list[TaskFinish],
    all_finished: bool,
) -> Outcome | None:
    """Running → Completing / Failed / Pending, in the order of controller.md's table.

    The success policy is evaluated by the caller before this (after failure policies).
    """
    if total_replicas == 0:
        return None
    if min_success is not None and counts.succeeded >= min_success:
        return Outcome(
            JobPhase.COMPLETING,
            "MinSuccess",
            f"{counts.succeeded} pods succeeded, minSuccess is {min_success}",
        )
    if all_finished:
        sum_task_min = sum(
            t.min_available if t.min_available is not None else t.replicas for t in tasks
        )
        if min_available >= sum_task_min:
            for task in tasks:
                if task.min_available is not None and task.succeeded < task.min_available:
                    return Outcome(
                        JobPhase.FAILED,
                        "TaskFailed",
                        f"task {task.name} finished with {task.succeeded} succeeded pods, "
                        f"fewer than its minAvailable {task.min_available}",
                    )
        enough = counts.succeeded >= min_available and (
            min_success is None or counts.succeeded >= min_success
        )
        if enough:
            return Outcome(
                JobPhase.COMPLETING,
                "CompletionsReached",
                f"every pod finished and {counts.succeeded} succeeded, "
                f"minAvailable is {min_available}",
            )
        return Outcome(
            JobPhase.FAILED,
            "PodFailed",
            f"every pod finished but only {counts.succeeded} succeeded "
            f"({counts.failed} failed), minAvailable is {min_available}",
        )
    if counts.pending > total_replicas - min_available:
        return Outcome(
            JobPhase.PENDING,
            "MinAvailableNotRunning",
            f"{counts.pending} pods are pending, more than the {total_replicas - min_available} "
            "the job can run without",
        )
    return None


def draining_done(counts: PodCounts) -> bool:
    """Aborting/Completing/Terminating end only when no pod is pending, running or terminating
    (difference 7: pods with a deletionTimestamp still count)."""
    return counts.pending == 0 and counts.running == 0 and counts.terminating == 0
