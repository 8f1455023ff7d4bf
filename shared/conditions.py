"""Typed conditions (metav1.Condition-shaped) in `status.typedConditions`, merged by type.

Several parts of vcjob write conditions of their own types into the same list; each replaces
only the entries of the types it produces and keeps every other entry as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, NotRequired, TypedDict

ConditionStatus = Literal["True", "False", "Unknown"]

ADMITTED: Final = "Admitted"
RUNNING: Final = "Running"
SUSPENDED: Final = "Suspended"
BLOCKED: Final = "Blocked"
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"


class Condition(TypedDict):
    """One entry of `status.typedConditions`, as Kubernetes' metav1.Condition."""

    type: str
    status: ConditionStatus
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: NotRequired[int]


def set_condition(conditions: Sequence[Mapping[str, Any]], new: Condition) -> list[dict[str, Any]]:
    """`conditions` with the entry of `new`'s type replaced (or appended).

    The transition time moves only when the status changes: a condition that stays True with a
    new reason or message keeps the time it became True. Entries of other types are kept."""
    out: list[dict[str, Any]] = []
    replaced = False
    for current in conditions:
        if current.get("type") != new["type"]:
            out.append(dict(current))
            continue
        if replaced:
            continue  # a duplicate of the type: the one entry written replaces them all
        merged: dict[str, Any] = dict(new)
        if current.get("status") == new["status"] and current.get("lastTransitionTime"):
            merged["lastTransitionTime"] = current["lastTransitionTime"]
        out.append(merged)
        replaced = True
    if not replaced:
        out.append(dict(new))
    return out


def find_condition(
    conditions: Sequence[Mapping[str, Any]] | None, type_: str
) -> Mapping[str, Any] | None:
    return next((c for c in conditions or () if c.get("type") == type_), None)


def is_true(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> bool:
    found = find_condition(conditions, type_)
    return found is not None and found.get("status") == "True"
