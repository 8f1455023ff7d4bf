"""The typed conditions the job controller writes (`Admitted`, `Running`, `Blocked`, `Complete`,
`Failed`) and `status.reason`, derived from the phase and what blocks the job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.job.decide.blocked import NOT_ADMITTED, Blocked
from shared import conditions as cond
from shared.models import JobPhase

# Volcano's state reasons renamed for the Failed condition (batch/v1 Job's names where one fits).
FAILED_REASONS: Final[Mapping[str, str]] = {"MaxRetryExceeded": "BackoffLimitExceeded"}
_ADMITTED_PHASES: Final = frozenset({"Inqueue", "Running"})


@dataclass(frozen=True)
class JobFacts:
    phase: JobPhase
    reason: str | None
    message: str | None
    pod_group_phase: str | None
    blocked: Blocked | None
    generation: int


def desired(facts: JobFacts, now: str) -> list[cond.Condition]:
    """The conditions of the types this controller owns, in their current state."""

    def make(type_: str, status: cond.ConditionStatus, reason: str, message: str) -> cond.Condition:
        return cond.Condition(
            type=type_,
            status=status,
            reason=reason,
            message=message,
            lastTransitionTime=now,
            observedGeneration=facts.generation,
        )

    phase, blocked = facts.phase, facts.blocked
    out: list[cond.Condition] = []
    started = phase not in (JobPhase.PENDING, JobPhase.RESTARTING)
    if facts.pod_group_phase in _ADMITTED_PHASES or (started and phase != JobPhase.ABORTED):
        out.append(make(cond.ADMITTED, "True", "Admitted", "the scheduler admitted the job"))
    elif blocked is not None and blocked.reason in NOT_ADMITTED:
        out.append(make(cond.ADMITTED, "False", blocked.reason, blocked.message))
    else:
        out.append(
            make(cond.ADMITTED, "False", "Waiting", "the job waits for the scheduler to admit it")
        )
    running = phase == JobPhase.RUNNING
    out.append(
        make(
            cond.RUNNING,
            "True" if running else "False",
            phase.value,
            facts.message or f"the job is {phase.value}",
        )
    )
    if blocked is not None and phase == JobPhase.PENDING:
        out.append(make(cond.BLOCKED, "True", blocked.reason, blocked.message))
    else:
        out.append(make(cond.BLOCKED, "False", "NotBlocked", "nothing blocks the job"))
    if phase == JobPhase.COMPLETED:
        out.append(make(cond.COMPLETE, "True", facts.reason or "Completed", facts.message or ""))
    if phase == JobPhase.FAILED:
        reason = FAILED_REASONS.get(facts.reason or "", facts.reason or "Failed")
        out.append(make(cond.FAILED, "True", reason, facts.message or ""))
    return out


def merged(
    existing: Sequence[Mapping[str, Any]], facts: JobFacts, now: str
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [dict(c) for c in existing]
    for condition in desired(facts, now):
        out = cond.set_condition(out, condition)
    return out


def status_reason(typed: Sequence[Mapping[str, Any]]) -> str | None:
    """`status.reason` (the REASON printer column): why a job fails or is blocked."""
    for type_ in (cond.FAILED, cond.BLOCKED):
        found = cond.find_condition(typed, type_)
        if found is not None and found.get("status") == "True":
            return str(found.get("reason") or type_)
    return None
