"""The queue context gathered from the Queue cache: the parent, the chain of ancestors (root and
cycles end it) and the other queues' hierarchies."""

from __future__ import annotations

from typing import Any

from shared.models import Queue
from webhook.queue.context import queue_context, staying_children


class Queues:
    """An in-memory Queue cache (what webhook.queuecache.QueueCache answers)."""

    def __init__(self, *queues: dict[str, Any]) -> None:
        self.queues = {q["metadata"]["name"]: Queue.from_wire(q) for q in queues}

    def get(self, name: str) -> Queue | None:
        return self.queues.get(name)

    def children(self, name: str) -> list[str]:
        return sorted(n for n, q in self.queues.items() if q.spec.parent == name)

    def hierarchies(self) -> dict[str, str]:
        return {
            n: q.metadata["annotations"]["volcano.sh/hierarchy"]
            for n, q in self.queues.items()
            if "volcano.sh/hierarchy" in (q.metadata.get("annotations") or {})
        }


def queue(name: str, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if "hierarchy" in extra:
        meta["annotations"] = {"volcano.sh/hierarchy": extra.pop("hierarchy")}
    return {"metadata": meta, "spec": {"parent": parent, **extra}}


def test_ancestors_from_the_parent_up_to_root() -> None:
    view = Queues(
        queue("root"),
        queue("gp", "root", capability={"cpu": "8"}),
        queue("p", "gp"),
        queue("other", hierarchy="root/x/y"),
    )
    context = queue_context(queue("q", "p", hierarchy="root/x"), view)
    assert context.parent_exists is True
    assert context.ancestors == [("p", {}), ("gp", {"cpu": "8"})]
    assert context.hierarchies == {"other": "root/x/y"}


def test_a_stored_cycle_or_a_missing_parent_ends_the_chain() -> None:
    view = Queues(queue("a", "b"), queue("b", "a"))
    assert [n for n, _ in queue_context(queue("q", "a"), view).ancestors] == ["a", "b"]
    missing = queue_context(queue("q", "gone"), view)
    assert (missing.parent_exists, missing.ancestors) == (False, [])


def test_without_a_cache_nothing_is_known() -> None:
    context = queue_context(queue("q", "p"), None)
    assert (context.parent_exists, list(context.ancestors), dict(context.hierarchies)) == (
        None,
        [],
        {},
    )


def test_the_parents_shares_its_other_children_and_everything_below() -> None:
    view = Queues(
        queue("root"),
        queue("p", "root", deserved={"cpu": "8"}, guarantee={"resource": {"cpu": "4"}}),
        queue("q", "p", deserved={"cpu": "2"}),
        queue("sib", "p", deserved={"cpu": "3"}),
        queue("kid", "q", capability={"cpu": "6"}),
        queue("grandkid", "kid", capability={"cpu": "5"}),
    )
    context = queue_context(queue("q", "p", deserved={"cpu": "1"}), view)
    assert context.parent_shares is not None
    assert (context.parent_shares.name, dict(context.parent_shares.deserved)) == ("p", {"cpu": "8"})
    assert dict(context.parent_shares.guarantee) == {"cpu": "4"}
    assert [(s.name, dict(s.deserved)) for s in context.siblings] == [("sib", {"cpu": "3"})]
    assert [c.name for c in context.children] == ["kid"]
    assert [dict(c) for c in context.descendant_capabilities] == [{"cpu": "6"}, {"cpu": "5"}]


def test_root_neither_limits_its_children_nor_is_limited_by_them() -> None:
    view = Queues(queue("root"), queue("top", "root", deserved={"cpu": "8"}))
    assert queue_context(queue("top", "root"), view).parent_shares is None
    root = queue_context(queue("root"), view)
    assert (list(root.children), list(root.descendant_capabilities)) == ([], [])


def test_a_parent_without_children_yet_tells_its_pods() -> None:
    busy = queue("busy", "root")
    busy["status"] = {"allocated": {"cpu": "2", "pods": "3"}}
    view = Queues(queue("root"), busy)
    assert queue_context(queue("q", "busy"), view).parent_pods == 3
    crowded = Queues(queue("root"), busy, queue("kid", "busy"))
    assert queue_context(queue("q", "busy"), crowded).parent_pods == 0  # a parent already


def test_a_child_being_deleted_does_not_hold_its_parent_back() -> None:
    leaving = queue("leaving", "p")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    view = Queues(queue("p", "root"), leaving, queue("staying", "p"))
    assert staying_children(view, "p") == ["staying"]
