"""The queue controller's writes, with a fake API: a new queue opens, CloseQueue with PodGroups
gives Closing then Closed, a Command is deleted before it is carried out, and opening under a
closed parent is retried."""

from __future__ import annotations

from typing import Any

import pytest

from controller.queues.decide import DefaultQueueSpec, StateError
from controller.queues.shell import ENSURE_DEFAULT_KEY, QueueController, QueueNotSeenYetError
from kubeio.client import COMMANDS, QUEUES
from kubeio.events import EventRecorder
from tests.support import FakeKube


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
def setup() -> tuple[QueueController, FakeKube]:
    kube = FakeKube()
    recorder = EventRecorder(kube, "test")
    controller = QueueController(kube, recorder, lambda: True)
    return controller, kube


def given(controller: QueueController, kube: FakeKube, obj: dict[str, Any]) -> None:
    """A Queue in the API and, as its watch would deliver it, in the controller's informer."""
    controller.queues.put(kube.put(QUEUES, obj))


def _queue(controller: QueueController, name: str) -> dict[str, Any]:
    found = controller.queues.get(name)
    assert found is not None, name
    return found


def _state(controller: QueueController, name: str) -> str | None:
    state = (controller.queues.get(name) or {}).get("status", {}).get("state")
    return None if state is None else str(state)


def test_a_new_queue_opens(setup: Any) -> None:
    controller, kube = setup
    given(controller, kube, queue("q"))
    controller.sync("q")
    assert _state(controller, "q") == "Open"
    assert kube.changes() == [("patch/status", "queues", "q")]
    controller.sync("q")
    assert len(kube.changes()) == 1, "nothing changed: no second write"


def test_close_with_podgroups_is_closing_then_closed(setup: Any) -> None:
    controller, kube = setup
    given(controller, kube, queue("q", "Open"))
    controller.podgroups.put(podgroup("pg", "q"))
    controller.commands.put(kube.put(COMMANDS, command("c1", "CloseQueue", "q")))
    controller._take_command("command:default/c1")
    assert kube.changes()[0] == ("delete", "commands", "c1")
    controller.sync("q")
    assert _state(controller, "q") == "Closing"
    assert _queue(controller, "q")["status"]["running"] == 1
    assert ("Normal", "CloseQueue", "Close queue succeed") in kube.events()
    controller.podgroups._store.clear()
    controller.sync("q")
    assert _state(controller, "q") == "Closed"


def test_a_command_already_gone_is_not_carried_out(setup: Any) -> None:
    controller, kube = setup
    given(controller, kube, queue("q", "Open"))
    controller.commands.put(kube.put(COMMANDS, command("c1", "CloseQueue", "q")))
    # Another controller instance deleted (and so carried out) the Command first; this one's
    # watch has not seen the deletion yet.
    kube.objects.pop((COMMANDS.plural, "default", "c1"))
    controller._take_command("command:default/c1")
    controller.sync("q")
    assert _state(controller, "q") == "Open"


def test_a_command_for_a_queue_not_watched_yet_is_kept_for_the_retry(setup: Any) -> None:
    """`vcjob queue create -S Closed` creates the Queue and at once a CloseQueue Command; the
    Command's watch event may come first."""
    controller, kube = setup
    kube.put(QUEUES, queue("q"))  # in the API, not yet in the informer
    controller.commands.put(kube.put(COMMANDS, command("c1", "CloseQueue", "q")))
    controller._take_command("command:default/c1")
    with pytest.raises(QueueNotSeenYetError):
        controller.sync("q")
    given(controller, kube, queue("q", "Open"))
    controller.sync("q")
    assert _state(controller, "q") == "Closed"


def test_a_command_for_a_queue_that_is_gone_is_dropped(setup: Any) -> None:
    controller, kube = setup
    controller.commands.put(kube.put(COMMANDS, command("c1", "CloseQueue", "q")))
    controller._take_command("command:default/c1")
    controller.sync("q")
    assert controller.queues.get("q") is None
    assert [c for c in kube.changes() if c[0] != "delete"] == []


def test_opening_under_a_closed_parent_fails_and_is_kept(setup: Any) -> None:
    controller, kube = setup
    given(controller, kube, queue("parent", "Closed"))
    given(controller, kube, queue("q", "Closed", parent="parent"))
    controller.commands.put(kube.put(COMMANDS, command("c1", "OpenQueue", "q")))
    controller._take_command("command:default/c1")
    with pytest.raises(StateError):
        controller.sync("q")
    assert _state(controller, "q") == "Closed"
    given(controller, kube, queue("parent", "Open"))
    controller.sync("q")
    assert _state(controller, "q") == "Open"


def test_closing_a_parent_closes_its_open_children_and_opening_it_reopens_them(
    setup: Any,
) -> None:
    controller, kube = setup
    given(controller, kube, queue("parent", "Open"))
    given(controller, kube, queue("child", "Open", parent="parent"))
    given(controller, kube, queue("closed-child", "Closed", parent="parent"))
    controller.commands.put(kube.put(COMMANDS, command("c1", "CloseQueue", "parent")))
    controller._take_command("command:default/c1")
    controller.sync("parent")
    assert _state(controller, "parent") == "Closed"
    child = _queue(controller, "child")
    assert child["metadata"]["annotations"] == {"volcano.sh/closed-by-parent": "true"}
    assert "annotations" not in _queue(controller, "closed-child")["metadata"]
    controller.sync("child")
    assert _state(controller, "child") == "Closed"

    controller.commands.put(kube.put(COMMANDS, command("c2", "OpenQueue", "parent")))
    controller._take_command("command:default/c2")
    controller.sync("parent")
    controller.sync("child")
    assert _state(controller, "child") == "Open"
    child = _queue(controller, "child")
    assert child["metadata"]["annotations"] == {"volcano.sh/closed-by-parent": "false"}
    # The child its owner closed stays closed.
    controller.sync("closed-child")
    assert _state(controller, "closed-child") == "Closed"


def test_the_echo_of_a_counts_write_is_not_synced_again(setup: Any) -> None:
    controller, _ = setup
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


def test_the_default_queue_is_created_when_missing_and_only_then() -> None:
    kube = FakeKube()
    controller = QueueController(
        kube, EventRecorder(kube, "test"), lambda: True, default_queue=DefaultQueueSpec(weight=2)
    )
    assert ENSURE_DEFAULT_KEY in controller.resync_keys()
    controller.handle(ENSURE_DEFAULT_KEY)
    created = kube.get(QUEUES, None, "default")
    assert created["spec"] == {"weight": 2, "reclaimable": True}
    writes = len(kube.changes())
    # Seen by the watch: nothing more to do, whatever its spec now says.
    controller.queues.put(created)
    controller.handle(ENSURE_DEFAULT_KEY)
    assert len(kube.changes()) == writes


def test_a_default_queue_created_meanwhile_by_someone_else_is_left_alone() -> None:
    kube = FakeKube()
    controller = QueueController(
        kube, EventRecorder(kube, "test"), lambda: True, default_queue=DefaultQueueSpec()
    )
    kube.put(QUEUES, queue("default"))  # not yet seen by the informer
    controller.handle(ENSURE_DEFAULT_KEY)  # AlreadyExists: no error
    assert kube.get(QUEUES, None, "default")["spec"] == {"weight": 1}


def test_without_a_default_queue_spec_none_is_created(setup: Any) -> None:
    controller, kube = setup
    assert ENSURE_DEFAULT_KEY not in controller.resync_keys()
    controller.handle(ENSURE_DEFAULT_KEY)
    assert kube.changes() == []
