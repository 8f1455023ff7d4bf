"""`spec.suspend` and `spec.managedBy`: whether the controller runs a job's pods, and whether it
touches the job at all; the `Suspended` entry of `status.typedConditions`.

A suspended job keeps its attempt: suspending deletes its unfinished pods (and its PodGroup, so
the gang is admitted afresh) but touches neither retryCount nor version; resuming creates the
missing pods of the same attempt. Nothing here counts as a retry, however often it happens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from shared import labels
from shared.conditions import Condition, find_condition, set_condition
from shared.models import Job, JobPhase

SUSPENDED: Final = "Suspended"
# Reasons of the Suspended condition (the Kubernetes Job's words).
JOB_SUSPENDED: Final = "JobSuspended"
JOB_RESUMED: Final = "JobResumed"
# The phase reason a suspended job's state carries (Pending, reason Suspended).
STATE_REASON: Final = "Suspended"
ABORTED_PHASES: Final = frozenset({JobPhase.ABORTING, JobPhase.ABORTED})


def is_suspended(job: Mapping[str, Any]) -> bool:
    """The one answer to "is this job suspended": `spec.suspend` is true (absent means false)."""
    spec = job.get("spec")
    return isinstance(spec, Mapping) and spec.get("suspend") is True


def managed_by_other(job: Mapping[str, Any]) -> bool:
    """`spec.managedBy` names another controller: vcjob leaves the job (status included) alone."""
    spec = job.get("spec")
    managed_by = spec.get("managedBy") if isinstance(spec, Mapping) else None
    return managed_by not in (None, "", labels.MANAGED_BY_VCJOB)


def find(conditions: Sequence[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return find_condition(conditions, type_)


def with_condition(
    conditions: Sequence[Mapping[str, Any]],
    *,
    type_: str,
    status: bool,
    reason: str,
    message: str,
    now: str,
    generation: int | None,
) -> list[dict[str, Any]]:
    """`conditions` with the entry of `type_` replaced or added, every other entry kept in place
    (`shared.conditions.set_condition`'s rule: the transition time moves only when the status
    flips)."""
    entry: Condition = {
        "type": type_,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }
    if generation is not None:
        entry["observedGeneration"] = generation
    return set_condition(conditions, entry)


def clock_paused(job: Job, phase: JobPhase) -> bool:
    """Whether the job's run clock (`spec.activeDeadlineSeconds`) stands still now: while it is
    suspended by its spec, or by Volcano's AbortJob command (`vcjob job suspend`: Aborting, then
    Aborted, until a ResumeJob command)."""
    return job.spec.suspend is True or phase in ABORTED_PHASES


def suspended_conditions(
    conditions: Sequence[Mapping[str, Any]],
    *,
    suspended: bool,
    message: str,
    now: str,
    generation: int | None,
) -> list[dict[str, Any]]:
    """The typed conditions after a reconcile: `Suspended` True while suspended, False (reason
    JobResumed) once a suspended job runs again; a job never suspended gets no entry."""
    if not suspended and find(conditions, SUSPENDED) is None:
        return [dict(c) for c in conditions]
    return with_condition(
        conditions,
        type_=SUSPENDED,
        status=suspended,
        reason=JOB_SUSPENDED if suspended else JOB_RESUMED,
        message=message,
        now=now,
        generation=generation,
    )
