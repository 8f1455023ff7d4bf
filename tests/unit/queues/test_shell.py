"""The queue controller's writes, with a fake API: a new queue opens, CloseQueue with PodGroups
gives Closing then Closed, a Command is deleted before it is carried out, and opening under a
closed parent is retried."""

from __future__ import annotations

from typing import Any

import pytest

from controller.queues.shell import QueueController
from controller.queues.state import StateError
from kubeio.client import Resource
from kubeio.errors import NotFoundError


class FakeKube:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.missing: set[str] = set()
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.queues: dict[str, dict[str, Any]] = {}

    def delete(self, res: Resource, namespace: str, name: str, **_: Any) -> None:
        self.calls.append(("delete", res.plural, name))
        if name in self.missing:
            raise NotFoundError(name, 404)

    def merge_patch(
        self, res: Resource, namespace: str | None, name: str, patch: dict[str, Any], sub: str = ""
    ) -> dict[str, Any]:
        self.calls.append(("patch", f"{res.plural}/{sub}", name))
        self.patches.append((name, patch))
        current = self.queues.get(name) or {"kind": "Queue", "metadata": {"name": name}}
        merged = {**current, **{k: v for k, v in patch.items() if k != "metadata"}}
        if "metadata" in patch:
            annotations = {**current["metadata"].get("annotations", {})}
            annotations.update(patch["metadata"]["annotations"])
            merged["metadata"] = {**current["metadata"], "annotations": annotations}
        return merged


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))


def queue(name: str, state: str | None = None, parent: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "Queue", "metadata": {"name": name}, "spec": {"weight": 1}}
    if parent:
        obj["spec"]["parent"] = parent
    if state:
        obj["status"] = {"state": state}
    return obj


def podgroup(name: str, queue_name: str) -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"queue": queue_name},
        "status": {"phase": "Running"},
    }


def command(name: str, action: str, target: str) -> dict[str, Any]:
    return {
        "kind": "Command",
        "metadata": {"name": name, "namespace": "default"},
        "action": action,
        "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": target},
    }


@pytest.fixture
def setup() -> tuple[QueueController, FakeKube, FakeRecorder]:
    kube, recorder = FakeKube(), FakeRecorder()
    controller = QueueController(kube, recorder, lambda: True)  # type: ignore[arg-type]
    # The fake API answers patches from what the controller's informer holds.
    kube.queues = controller.queues._store
    return controller, kube, recorder


def _state(controller: QueueController, name: str) -> str | None:
    return (controller.queues.get(name) or {}).get("status", {}).get("state")


def test_a_new_queue_opens(setup: Any) -> None:
    controller, kube, _ = setup
    controller.queues.put(queue("q"))
    controller.sync("q")
    assert _state(controller, "q") == "Open"
    assert kube.calls == [("patch", "queues/status", "q")]
    controller.sync("q")
    assert len(kube.calls) == 1, "nothing changed: no second write"


def test_close_with_podgroups_is_closing_then_closed(setup: Any) -> None:
    controller, kube, recorder = setup
    controller.queues.put(queue("q", "Open"))
    controller.podgroups.put(podgroup("pg", "q"))
    controller.commands.put(command("c1", "CloseQueue", "q"))
    controller._take_command("command:default/c1")
    assert kube.calls[0] == ("delete", "commands", "c1")
    controller.sync("q")
    assert _state(controller, "q") == "Closing"
    assert controller.queues.get("q")["status"]["running"] == 1  # type: ignore[index]
    assert ("Normal", "CloseQueue", "Close queue succeed") in recorder.events
    controller.podgroups._store.clear()
    controller.sync("q")
    assert _state(controller, "q") == "Closed"


def test_a_command_already_gone_is_not_carried_out(setup: Any) -> None:
    controller, kube, _ = setup
    controller.queues.put(queue("q", "Open"))
    controller.commands.put(command("c1", "CloseQueue", "q"))
    kube.missing.add("c1")
    controller._take_command("command:default/c1")
    controller.sync("q")
    assert _state(controller, "q") == "Open"


def test_opening_under_a_closed_parent_fails_and_is_kept(setup: Any) -> None:
    controller, _, _ = setup
    controller.queues.put(queue("parent", "Closed"))
    controller.queues.put(queue("q", "Closed", parent="parent"))
    controller.commands.put(command("c1", "OpenQueue", "q"))
    controller._take_command("command:default/c1")
    with pytest.raises(StateError):
        controller.sync("q")
    assert _state(controller, "q") == "Closed"
    controller.queues.put(queue("parent", "Open"))
    controller.sync("q")
    assert _state(controller, "q") == "Open"


def test_closing_a_parent_closes_its_open_children_and_opening_it_reopens_them(
    setup: Any,
) -> None:
    controller, _, _ = setup
    controller.queues.put(queue("parent", "Open"))
    controller.queues.put(queue("child", "Open", parent="parent"))
    controller.queues.put(queue("closed-child", "Closed", parent="parent"))
    controller.commands.put(command("c1", "CloseQueue", "parent"))
    controller._take_command("command:default/c1")
    controller.sync("parent")
    assert _state(controller, "parent") == "Closed"
    child = controller.queues.get("child")
    assert child["metadata"]["annotations"] == {"volcano.sh/closed-by-parent": "true"}  # type: ignore[index]
    assert "annotations" not in controller.queues.get("closed-child")["metadata"]  # type: ignore[index]
    controller.sync("child")
    assert _state(controller, "child") == "Closed"

    controller.commands.put(command("c2", "OpenQueue", "parent"))
    controller._take_command("command:default/c2")
    controller.sync("parent")
    controller.sync("child")
    assert _state(controller, "child") == "Open"
    child = controller.queues.get("child")
    assert child["metadata"]["annotations"] == {"volcano.sh/closed-by-parent": "false"}  # type: ignore[index]
    # The child its owner closed stays closed.
    controller.sync("closed-child")
    assert _state(controller, "closed-child") == "Closed"


def test_the_echo_of_a_counts_write_is_not_synced_again(setup: Any) -> None:
    controller, _, _ = setup
    before = {**queue("q", "Open"), "metadata": {"name": "q", "resourceVersion": "1"}}
    echo = {
        **before,
        "metadata": {"name": "q", "resourceVersion": "2"},
        "status": {"state": "Open", "pending": 3, "running": 1},
    }
    controller._on_queue(before, echo)
    assert len(controller.queue) == 0
    closed = {
        **echo,
        "metadata": {"name": "q", "resourceVersion": "3"},
        "status": {"state": "Closed"},
    }
    controller._on_queue(echo, closed)
    assert len(controller.queue) == 1
    reparented = {**before, "spec": {"weight": 1, "parent": "root"}}
    controller._on_queue(before, reparented)
    controller._on_queue(None, before)
    assert controller.queue.get(timeout=0) == "q"
