"""The typed conditions the job controller writes (`Admitted`, `Running`, `Blocked`, `Complete`,
`Failed`) and `status.reason`, derived from the phase and what blocks the job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from controller.job.decide.blocked import NOT_ADMITTED, Blocked
from shared import conditions as cond
from shared.models import JobPhase

# Volcano's state reasons renamed for the Failed condition (batch/v1 Job's names where one fits).
FAILED_REASONS: Final[Mapping[str, str]] = {"MaxRetryExceeded": "BackoffLimitExceeded"}
# Completions the REASON column leaves empty: every pod ran to its end (batch/v1 Job's
# `CompletionsReached`), or no reason was recorded.
ORDINARY_COMPLETIONS: Final = frozenset({"CompletionsReached", "Completed", ""})
_ADMITTED_PHASES: Final = frozenset({"Inqueue", "Running"})
# A status change that only reports (counts of pending and running pods, the scheduler's
# admission) waits this long for the next change instead of taking a write of its own.
REPORT_DELAY: Final = timedelta(seconds=2)
_REPORTED: Final = frozenset(
    {"pending", "running", "unknown", "taskStatusCount", "typedConditions"}
)


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
    """`status.reason` (the REASON printer column): why a job fails or is blocked, or what
    completed it before all its pods had finished (`SuccessPolicy`, `MinSuccess`, a command or a
    policy action). A job whose pods all finished (`CompletionsReached`) needs no reason."""
    for type_ in (cond.FAILED, cond.BLOCKED):
        found = cond.find_condition(typed, type_)
        if found is not None and found.get("status") == "True":
            return str(found.get("reason") or type_)
    complete = cond.find_condition(typed, cond.COMPLETE)
    if complete is not None and complete.get("status") == "True":
        reason = str(complete.get("reason") or "")
        if reason not in ORDINARY_COMPLETIONS:
            return reason
    return None


def only_reported(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when status `new` differs from `old` only in what reports the pods and the
    scheduler: pods moving between pending, running and unknown (as many as before, so
    taskStatusCount moves with them) and the Admitted condition turning True. No phase, no pod
    created, deleted or finished, no other condition: nothing a reader waits on to act. What
    turns False, or any other field, is written at once."""
    if {k: v for k, v in old.items() if k not in _REPORTED} != {
        k: v for k, v in new.items() if k not in _REPORTED
    }:
        return False
    if _live_pods(old) != _live_pods(new):
        return False  # pods came or went: they are counted at once
    old_typed = old.get("typedConditions") or []
    new_typed = new.get("typedConditions") or []
    if [c for c in old_typed if c.get("type") != cond.ADMITTED] != [
        c for c in new_typed if c.get("type") != cond.ADMITTED
    ]:
        return False
    return cond.is_true(new_typed, cond.ADMITTED) or not cond.is_true(old_typed, cond.ADMITTED)


def _live_pods(status: Mapping[str, Any]) -> int:
    return sum(int(status.get(k) or 0) for k in ("pending", "running", "unknown"))


def report_wait(
    old: Mapping[str, Any], new: Mapping[str, Any], due: datetime | None, now: datetime
) -> timedelta | None:
    """How much longer the write of `new` may wait (None: write it now). A change that only
    reports (`only_reported`) waits `REPORT_DELAY` from when it was first seen (`due`, None the
    first time), so that the pods of a job turning Running one by one, and the scheduler's
    admission before them, share one write, or ride on the write of the next phase. It is
    never held longer, and no decision reads it: the planner counts the pods and reads the
    PodGroup itself."""
    if not only_reported(old, new):
        return None
    if due is None:
        return REPORT_DELAY
    return due - now if due > now else None
