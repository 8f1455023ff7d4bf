"""The Queue state machine (Volcano's queue controller), as pure functions.

A queue is Closing while PodGroups still name it and Closed once none do; a new queue (no state
yet) becomes Open. `OpenQueue` and `CloseQueue` Commands move it; `root` is never closed and a
queue cannot open while its parent is Closing or Closed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from shared.wire import spec_of, status_phase

OPEN: Final = "Open"
CLOSING: Final = "Closing"
CLOSED: Final = "Closed"
UNKNOWN: Final = "Unknown"
ROOT: Final = "root"
DEFAULT_QUEUE: Final = "default"


class Action(StrEnum):
    SYNC = "SyncQueue"
    OPEN = "OpenQueue"
    CLOSE = "CloseQueue"

    @classmethod
    def of(cls, text: str) -> Action:
        """An unknown Command action behaves like a plain sync, as in Volcano."""
        try:
            return cls(text)
        except ValueError:
            return cls.SYNC


class StateError(ValueError):
    """The action cannot be carried out now (the request is retried)."""


@dataclass(frozen=True)
class Transition:
    state: str
    # False when the action was refused silently (closing root).
    applied: bool = True


def next_state(
    name: str, current: str | None, action: Action, podgroups: int, parent_state: str | None
) -> Transition:
    """The queue's state after `action`, given how many PodGroups name it and its parent's
    state (None: no parent)."""
    state = current or OPEN
    if state not in (OPEN, CLOSING, CLOSED, UNKNOWN):
        raise StateError(f"queue {name} state {state} is invalid")
    drained = CLOSED if podgroups == 0 else CLOSING
    if action is Action.CLOSE:
        if name == ROOT:
            return Transition(state, applied=False)
        return Transition(CLOSED if state == CLOSED else drained)
    if action is Action.OPEN:
        if parent_state in (CLOSING, CLOSED):
            raise StateError(f"queue {name} cannot be opened while its parent is {parent_state}")
        return Transition(OPEN)
    if state == CLOSING:
        return Transition(drained)
    return Transition(state)


def podgroup_counts(podgroups: Iterable[dict[str, Any]]) -> dict[str, int]:
    """The status counters: PodGroups of the queue by phase (pending, running, inqueue,
    unknown, completed), as Volcano's QueueStatus has them."""
    phases = Counter(status_phase(pg) or "Pending" for pg in podgroups)
    return {
        "pending": phases["Pending"],
        "running": phases["Running"],
        "inqueue": phases["Inqueue"],
        "unknown": phases["Unknown"],
        "completed": phases["Completed"],
    }


def queue_of_podgroup(podgroup: dict[str, Any]) -> str:
    return str(spec_of(podgroup).get("queue") or DEFAULT_QUEUE)


CLOSED_BY_PARENT: Final = "volcano.sh/closed-by-parent"


@dataclass(frozen=True)
class QueueView:
    """What the cascade needs to know of one queue."""

    name: str
    state: str | None
    closed_by_parent: bool


@dataclass(frozen=True)
class Cascade:
    """A request for another queue, and the closed-by-parent mark to set on it first."""

    queue: str
    action: Action
    mark: bool | None = None


def cascade(
    queue: QueueView,
    state: str,
    action: Action,
    parent_state: str | None,
    children: Iterable[QueueView],
) -> list[Cascade]:
    """Requests that follow from `queue` reaching `state` through `action`: a parent that closes
    closes its open children (marking them closed by their parent); a parent that opens reopens
    the children it closed. A queue whose parent is Closing or Closed closes itself; one that
    its parent closed reopens with the parent. The mark on `queue` itself is cleared once it is
    Open."""
    out: list[Cascade] = []
    if action is Action.CLOSE and state in (CLOSING, CLOSED):
        out += [
            Cascade(c.name, Action.CLOSE, mark=True)
            for c in children
            if (c.state or OPEN) in (OPEN, UNKNOWN)
        ]
    elif action is Action.OPEN and state == OPEN:
        out += [Cascade(c.name, Action.OPEN) for c in children if c.closed_by_parent]
    elif action is Action.SYNC:
        if parent_state in (CLOSING, CLOSED) and state in (OPEN, UNKNOWN):
            out.append(Cascade(queue.name, Action.CLOSE, mark=True))
        elif parent_state in (None, OPEN) and queue.closed_by_parent and state != OPEN:
            out.append(Cascade(queue.name, Action.OPEN))
    if state == OPEN and queue.closed_by_parent:
        out.append(Cascade(queue.name, Action.SYNC, mark=False))
    return out


@dataclass(frozen=True)
class DefaultQueueSpec:
    """The `default` Queue the controller creates when none exists, as Volcano's scheduler does
    at start (a Helm hook could not: it may run before kube-apiserver serves the Queue CRD)."""

    weight: int = 1
    reclaimable: bool = True


def default_queue(spec: DefaultQueueSpec) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": DEFAULT_QUEUE},
        "spec": {"weight": spec.weight, "reclaimable": spec.reclaimable},
    }
