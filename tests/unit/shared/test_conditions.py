"""`set_condition`: typed conditions merged by type, other types kept, times kept on no change."""

from __future__ import annotations

from typing import Any

import pytest

from shared.conditions import Condition, ConditionStatus, is_true, set_condition


def c(type_: str, status: ConditionStatus, reason: str = "R", at: str = "t1") -> Condition:
    return Condition(
        type=type_,
        status=status,
        reason=reason,
        message="m",
        lastTransitionTime=at,
        observedGeneration=1,
    )


CASES: list[tuple[str, list[dict[str, Any]], Condition, list[tuple[str, str, str, str]]]] = [
    (
        "appended to an empty list",
        [],
        c("Running", "True", at="t2"),
        [("Running", "True", "R", "t2")],
    ),
    (
        "same status keeps the transition time, takes the new reason",
        [dict(c("Blocked", "True", "QueueClosed", "t1"))],
        c("Blocked", "True", "MissingPVC", "t2"),
        [("Blocked", "True", "MissingPVC", "t1")],
    ),
    (
        "a new status moves the transition time",
        [dict(c("Blocked", "True", "QueueClosed", "t1"))],
        c("Blocked", "False", "NotBlocked", "t2"),
        [("Blocked", "False", "NotBlocked", "t2")],
    ),
    (
        "entries of other types are kept in place",
        [dict(c("Suspended", "True", "Suspended", "t0")), dict(c("Running", "True"))],
        c("Running", "False", "Pending", "t2"),
        [("Suspended", "True", "Suspended", "t0"), ("Running", "False", "Pending", "t2")],
    ),
    (
        "duplicates of the type collapse into one entry",
        [dict(c("Running", "True", at="t0")), dict(c("Running", "False"))],
        c("Running", "True", at="t3"),
        [("Running", "True", "R", "t0")],
    ),
]


@pytest.mark.parametrize(("why", "before", "new", "after"), CASES, ids=[x[0] for x in CASES])
def test_set_condition(
    why: str,
    before: list[dict[str, Any]],
    new: Condition,
    after: list[tuple[str, str, str, str]],
) -> None:
    merged = set_condition(before, new)
    assert [(x["type"], x["status"], x["reason"], x["lastTransitionTime"]) for x in merged] == after


def test_set_condition_leaves_its_input_alone() -> None:
    before = [dict(c("Running", "True"))]
    set_condition(before, c("Running", "False", at="t9"))
    assert before[0]["status"] == "True"


def test_is_true() -> None:
    assert is_true([dict(c("Failed", "True"))], "Failed")
    assert not is_true([dict(c("Failed", "False"))], "Failed")
    assert not is_true(None, "Failed")
