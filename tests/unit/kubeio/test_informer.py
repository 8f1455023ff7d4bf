"""The list+watch loop: resume from the last resourceVersion, bookmarks, re-list on 410."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from controller.job.shell.cache import Cache
from kubeio.client import PODS
from kubeio.errors import TransientError
from kubeio.informer import Reflector, WatchSpec


def pod(name: str, rv: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": rv,
            "labels": {"volcano.sh/job-name": "j"},
        }
    }


class ScriptedApi:
    """`list` answers from `lists`; each `watch` call plays the next script (events, then an
    optional exception), recording the resourceVersion it was asked to start from."""

    def __init__(
        self, lists: list[tuple[list[dict[str, Any]], str]], watches: list[list[Any]]
    ) -> None:
        self.lists = lists
        self.watches = watches
        self.list_calls = 0
        self.watch_from: list[str] = []
        self.done = threading.Event()

    def list(
        self, res: Any, *, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        self.list_calls += 1
        return self.lists[min(self.list_calls, len(self.lists)) - 1]

    def watch(
        self, res: Any, *, resource_version: str, on_open: Callable[[Any], None], **_: Any
    ) -> Iterator[dict[str, Any]]:
        self.watch_from.append(resource_version)
        if not self.watches:
            self.done.set()
            time.sleep(0.05)
            return
        for step in self.watches.pop(0):
            if isinstance(step, Exception):
                raise step
            yield step


def run(api: ScriptedApi) -> tuple[Cache, list[str]]:
    cache, keys, stop = Cache(), [], threading.Event()
    cache.upsert("Job", {"metadata": {"name": "j", "namespace": "ns", "uid": "j"}})
    reflector = Reflector(api, WatchSpec(PODS), cache, keys.extend, stop)  # type: ignore[arg-type]
    reflector.start()
    assert api.done.wait(5), "the script ran out"
    stop.set()
    assert reflector.synced
    return cache, keys


def test_watch_resumes_from_the_last_event_and_bookmark() -> None:
    api = ScriptedApi(
        lists=[([pod("a", "10")], "10")],
        watches=[
            [{"type": "ADDED", "object": pod("b", "11")}],
            [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}],
            [{"type": "MODIFIED", "object": pod("b", "16")}, TransientError("connection reset")],
        ],
    )
    cache, keys = run(api)
    assert api.list_calls == 1
    assert api.watch_from[:4] == ["10", "11", "15", "16"]
    assert sorted(p["metadata"]["name"] for p in cache.view("ns/j").pods) == ["a", "b"]
    assert "ns/j" in keys


def test_gone_relists_and_records_pods_that_vanished_meanwhile() -> None:
    api = ScriptedApi(
        lists=[([pod("a", "10"), pod("b", "10")], "10"), ([pod("b", "30")], "30")],
        watches=[
            [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}]
        ],
    )
    cache, _keys = run(api)
    assert api.list_calls == 2
    assert api.watch_from[:2] == ["10", "30"]
    assert [p["metadata"]["name"] for p in cache.view("ns/j").pods] == ["b"]
    assert [e.pod["metadata"]["name"] for e in cache.take_edges("ns/j")] == ["a"]


class _Recorder:
    """A store that records what the reflector hands it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def replace_all(self, kind: str, items: Any) -> set[str]:
        self.calls.append(("replace_all", len(list(items))))
        return set()

    def upsert(self, kind: str, obj: dict[str, Any]) -> str | None:
        self.calls.append(("upsert", 1))
        return None

    def remove(self, kind: str, obj: dict[str, Any]) -> str | None:
        self.calls.append(("remove", 1))
        return None


class _Missing:
    def list(self, res: Any, **_: Any) -> Any:
        from kubeio.errors import NotFoundError

        raise NotFoundError("the server could not find the requested resource", 404, "NotFound")


def test_a_resource_no_longer_served_empties_the_store_and_ends_the_loop() -> None:
    store = _Recorder()
    stop = threading.Event()
    reflector = Reflector(
        _Missing(),  # type: ignore[arg-type]
        WatchSpec(PODS),
        store,
        lambda _keys: None,
        stop,
        end_when_missing=True,
    )
    reflector.start()
    assert reflector.missing.wait(5.0)
    reflector.join(5.0)
    assert not reflector.alive()
    assert store.calls == [("replace_all", 0)]
    stop.set()
