"""What the Queue rules need to know about the other queues, gathered from the webhook's Queue
cache (`webhook.queueview.QueueView`): the parent and its ancestors, the other queues'
hierarchies, the parent's and the siblings' shares, the children and the queues below."""

from __future__ import annotations

from typing import Any, Final, Protocol, runtime_checkable

from shared import labels, quantity
from shared.models.scheduling import Queue
from webhook.queue.hierarchy import QueueContext, QueueShares
from webhook.queueview import QueueView


@runtime_checkable
class HierarchyView(Protocol):
    def hierarchies(self) -> dict[str, str]: ...


# Deeper parent chains than this are not followed (a cycle stored without the webhook ends too).
MAX_QUEUE_DEPTH: Final = 32


def queue_context(queue: dict[str, Any], view: QueueView | None) -> QueueContext:
    """What the rules need to know about the queues around `queue` (without a cache, nothing:
    the checks that need it are skipped)."""
    if view is None:
        return QueueContext()
    name = str((queue.get("metadata") or {}).get("name") or "")
    parent = (queue.get("spec") or {}).get("parent")
    parent_exists = None
    ancestors: list[tuple[str, dict[str, Any]]] = []
    if isinstance(parent, str) and parent:
        parent_exists = view.get(parent) is not None
        seen = {name}
        current: str | None = parent
        while current and current != labels.ROOT_QUEUE and current not in seen:
            if len(ancestors) >= MAX_QUEUE_DEPTH:
                break
            found = view.get(current)
            if found is None:
                break
            seen.add(current)
            ancestors.append((current, found.spec.capability or {}))
            current = found.spec.parent
    hierarchies = view.hierarchies() if isinstance(view, HierarchyView) else {}
    hierarchies.pop(name, None)
    parent_queue = view.get(parent) if isinstance(parent, str) and parent else None
    parent_shares = None
    siblings: list[QueueShares] = []
    parent_pods = 0
    if parent_queue is not None and parent != labels.ROOT_QUEUE:
        parent_shares = _shares(parent_queue)
        siblings = [_shares(q) for q in _queues(view, view.children(str(parent))) if q.name != name]
        if not siblings:
            parent_pods = _allocated_pods(parent_queue)
    # Volcano leaves `root` out of the hierarchy's checks: every top-level queue is its child.
    below = bool(name) and name != labels.ROOT_QUEUE
    children = _queues(view, view.children(name)) if below else []
    return QueueContext(
        parent_exists,
        ancestors,
        hierarchies,
        parent_shares=parent_shares,
        siblings=siblings,
        children=[_shares(c) for c in children],
        descendant_capabilities=[
            q.spec.capability or {} for q in (_descendants(view, name) if below else [])
        ],
        parent_pods=parent_pods,
    )


def _allocated_pods(queue: Queue) -> int:
    allocated = (queue.status.allocated or {}) if queue.status else {}
    amount = quantity.try_parse(allocated.get("pods"))
    return int(amount) if amount is not None and amount > 0 else 0


def staying_children(view: QueueView, name: str) -> list[str]:
    """The child queues that are not being deleted: a child deleted just before its parent (as
    Volcano's suites clean up) does not hold the parent back."""
    return [
        q.name
        for q in _queues(view, view.children(name))
        if not q.metadata.get("deletionTimestamp")
    ]


def _shares(queue: Queue) -> QueueShares:
    guarantee = queue.spec.guarantee.resource if queue.spec.guarantee else None
    return QueueShares(queue.name, guarantee or {}, queue.spec.deserved or {})


def _queues(view: QueueView, names: list[str]) -> list[Queue]:
    return [q for q in (view.get(n) for n in names) if q is not None]


def _descendants(view: QueueView, name: str) -> list[Queue]:
    """Every queue below `name` (a stored cycle, or a chain deeper than MAX_QUEUE_DEPTH, ends)."""
    found: list[Queue] = []
    seen = {name}
    level = [name] if name else []
    for _ in range(MAX_QUEUE_DEPTH):
        below = _queues(view, [c for n in level for c in view.children(n)])
        below = [q for q in below if q.name not in seen]
        if not below:
            break
        seen.update(q.name for q in below)
        found += below
        level = [q.name for q in below]
    return found
