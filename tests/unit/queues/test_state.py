"""The queue state machine as a table: (state, action, PodGroups, parent) -> state."""

from __future__ import annotations

import pytest

from controller.queues.decide import (
    Action,
    Cascade,
    QueueView,
    StateError,
    cascade,
    next_state,
    podgroup_counts,
    queue_of_podgroup,
)

SYNC, OPEN, CLOSE = Action.SYNC, Action.OPEN, Action.CLOSE

TABLE = [
    # current, action, podgroups, parent state, next
    (None, SYNC, 0, None, "Open"),
    ("", SYNC, 3, None, "Open"),
    ("Open", SYNC, 2, None, "Open"),
    ("Open", OPEN, 0, None, "Open"),
    ("Open", CLOSE, 0, None, "Closed"),
    ("Open", CLOSE, 1, None, "Closing"),
    (None, CLOSE, 1, None, "Closing"),
    ("Closing", SYNC, 1, None, "Closing"),
    ("Closing", SYNC, 0, None, "Closed"),
    ("Closing", OPEN, 1, "Open", "Open"),
    ("Closing", CLOSE, 0, None, "Closed"),
    ("Closing", CLOSE, 2, None, "Closing"),
    ("Closed", SYNC, 0, None, "Closed"),
    ("Closed", SYNC, 4, None, "Closed"),
    ("Closed", CLOSE, 4, None, "Closed"),
    ("Closed", OPEN, 0, None, "Open"),
    ("Closed", OPEN, 0, "Open", "Open"),
    ("Unknown", SYNC, 0, None, "Unknown"),
    ("Unknown", OPEN, 0, None, "Open"),
    ("Unknown", CLOSE, 1, None, "Closing"),
]


@pytest.mark.parametrize(("current", "action", "podgroups", "parent", "expected"), TABLE)
def test_next_state(
    current: str | None, action: Action, podgroups: int, parent: str | None, expected: str
) -> None:
    assert next_state("q", current, action, podgroups, parent).state == expected


@pytest.mark.parametrize("parent", ["Closing", "Closed"])
def test_a_queue_cannot_open_under_a_closed_parent(parent: str) -> None:
    with pytest.raises(StateError, match=f"parent is {parent}"):
        next_state("q", "Closed", OPEN, 0, parent)


def test_root_is_never_closed() -> None:
    transition = next_state("root", "Open", CLOSE, 0, None)
    assert transition.state == "Open"
    assert not transition.applied


def test_an_unknown_state_is_refused() -> None:
    with pytest.raises(StateError, match="state Paused is invalid"):
        next_state("q", "Paused", SYNC, 0, None)


def test_unknown_command_actions_sync() -> None:
    assert Action.of("Bogus") is SYNC
    assert Action.of("CloseQueue") is CLOSE


def test_counts_and_queue_of_a_podgroup() -> None:
    groups = [
        {"spec": {"queue": "a"}, "status": {"phase": "Running"}},
        {"spec": {"queue": "a"}, "status": {"phase": "Inqueue"}},
        {"spec": {}, "status": {}},
        {"spec": {"queue": "a"}, "status": {"phase": "Unknown"}},
        {"spec": {"queue": "a"}, "status": {"phase": "Unknown"}},
        {"spec": {"queue": "a"}, "status": {"phase": "Completed"}},
    ]
    assert podgroup_counts(groups) == {
        "pending": 1,
        "running": 1,
        "inqueue": 1,
        "unknown": 2,
        "completed": 1,
    }
    assert [queue_of_podgroup(g) for g in groups] == ["a", "a", "default", "a", "a", "a"]


def _q(name: str, state: str | None = "Open", marked: bool = False) -> QueueView:
    return QueueView(name, state, marked)


CASCADES = [
    # queue, state after, action, parent state, children, requests
    (_q("p"), "Closing", CLOSE, None, [_q("a"), _q("b", "Closed"), _q("c", None)],
     [Cascade("a", CLOSE, True), Cascade("c", CLOSE, True)]),
    (_q("p", "Closed"), "Open", OPEN, None, [_q("a", "Closed", True), _q("b", "Closed")],
     [Cascade("a", OPEN)]),
    (_q("q"), "Open", SYNC, "Closed", [], [Cascade("q", CLOSE, True)]),
    (_q("q", "Closed", True), "Closed", SYNC, "Open", [], [Cascade("q", OPEN)]),
    (_q("q", "Closed", True), "Closed", SYNC, "Closing", [], []),
    (_q("q", "Closed"), "Closed", SYNC, "Open", [], []),
    (_q("q", "Open", True), "Open", SYNC, "Open", [], [Cascade("q", SYNC, False)]),
    (_q("q"), "Open", SYNC, None, [_q("a")], []),
]  # fmt: skip


@pytest.mark.parametrize(("queue", "state", "action", "parent", "children", "expected"), CASCADES)
def test_cascade(
    queue: QueueView,
    state: str,
    action: Action,
    parent: str | None,
    children: list[QueueView],
    expected: list[Cascade],
) -> None:
    assert cascade(queue, state, action, parent, children) == expected
