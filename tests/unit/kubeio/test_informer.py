"""The list+watch loop: resume from the last resourceVersion, bookmarks, re-list on 410; one
watch shared by the stores of a process."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from controller.job.shell.cache import Cache
from kubeio.client import PODS
from kubeio.errors import NotFoundError, TransientError
from kubeio.informer import Reflector, SharedWatches, WatchSpec
from tests.support import FakeKube


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


def lists(kube: FakeKube) -> int:
    return sum(1 for verb, _plural, _name in kube.calls if verb == "list")


def run(kube: FakeKube) -> tuple[Cache, list[str]]:
    cache, stop = Cache(), threading.Event()
    keys: list[str] = []
    cache.upsert("Job", {"metadata": {"name": "j", "namespace": "ns", "uid": "j"}})
    reflector = Reflector(kube, WatchSpec(PODS), cache, keys.extend, stop)
    reflector.start()
    assert kube.watches_done.wait(5), "the script ran out"
    stop.set()
    assert reflector.synced
    return cache, keys


def test_watch_resumes_from_the_last_event_and_bookmark() -> None:
    kube = FakeKube()
    kube.rv = 9
    kube.put(PODS, pod("a", "10"))
    kube.watch_scripts = [
        [{"type": "ADDED", "object": pod("b", "11")}],
        [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}],
        [{"type": "MODIFIED", "object": pod("b", "16")}, TransientError("connection reset")],
    ]
    cache, keys = run(kube)
    assert lists(kube) == 1
    assert kube.watch_from[:4] == ["10", "11", "15", "16"]
    assert sorted(p["metadata"]["name"] for p in cache.view("ns/j").pods) == ["a", "b"]
    assert "ns/j" in keys


def test_gone_relists_and_records_pods_that_vanished_meanwhile() -> None:
    kube = FakeKube()
    kube.rv = 8
    kube.put(PODS, pod("a", "9"))
    kube.put(PODS, pod("b", "10"))

    def meanwhile() -> None:
        """a is deleted and b changed while the watch was away, long enough to expire."""
        del kube.objects[("pods", "ns", "a")]
        kube.rv = 29
        kube.put(PODS, pod("b", "30"))

    kube.watch_scripts = [
        [
            meanwhile,
            {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}},
        ]
    ]
    cache, _keys = run(kube)
    assert lists(kube) == 2
    assert kube.watch_from[:2] == ["10", "30"]
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


def test_a_resource_no_longer_served_empties_the_store_and_ends_the_loop() -> None:
    store = _Recorder()
    stop = threading.Event()
    kube = FakeKube()
    kube.failures[("list", "pods")] = [
        NotFoundError("the server could not find the requested resource", 404, "NotFound")
    ]
    reflector = Reflector(
        kube,
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


def test_one_shared_watch_feeds_every_subscriber_the_same_objects() -> None:
    kube = FakeKube()
    kube.rv = 9
    kube.put(PODS, pod("a", "10"))
    kube.watch_scripts = [[{"type": "ADDED", "object": pod("b", "11")}]]
    watches, cache, recorder = SharedWatches(kube), Cache(), _Recorder()
    cache.upsert("Job", {"metadata": {"name": "j", "namespace": "ns", "uid": "j"}})
    keys: list[str] = []
    stop = threading.Event()
    first = watches.reflector(WatchSpec(PODS), cache, keys.extend, stop)
    second = watches.reflector(WatchSpec(PODS), recorder, keys.extend, stop)
    other_selector = watches.reflector(WatchSpec(PODS, "x"), _Recorder(), keys.extend, stop)
    assert first is second and other_selector is not first
    first.start()
    second.start()  # started once, whoever asks
    assert kube.watches_done.wait(5), "the script ran out"
    stop.set()
    assert lists(kube) == 1 and kube.watch_from[0] == "10"
    assert recorder.calls[:2] == [("replace_all", 1), ("upsert", 1)]
    assert sorted(p["metadata"]["name"] for p in cache.view("ns/j").pods) == ["a", "b"]
    assert keys.count("ns/j") == 2  # the cache's keys, from the list and from the event


def test_a_store_that_comes_after_the_start_gets_a_watch_of_its_own() -> None:
    kube = FakeKube()
    watches, stop = SharedWatches(kube), threading.Event()
    first = watches.reflector(WatchSpec(PODS), _Recorder(), _ignore, stop)
    first.start()
    try:
        later = watches.reflector(WatchSpec(PODS), _Recorder(), _ignore, stop)
        assert later is not first
        with pytest.raises(RuntimeError, match="has started"):
            first.subscribe(_Recorder(), _ignore, stop)
    finally:
        stop.set()


def test_a_shared_watch_ends_with_its_last_subscriber() -> None:
    kube = FakeKube()
    kube.rv = 9
    early_stop, late_stop = threading.Event(), threading.Event()
    kube.watch_scripts = [
        [
            {"type": "ADDED", "object": pod("a", "10")},
            early_stop.set,
            {"type": "ADDED", "object": pod("b", "11")},
        ]
    ]
    watches, early, late = SharedWatches(kube), _Recorder(), _Recorder()
    reflector = watches.reflector(WatchSpec(PODS), early, _ignore, early_stop)
    watches.reflector(WatchSpec(PODS), late, _ignore, late_stop)
    reflector.start()
    assert kube.watches_done.wait(5), "the script ran out"
    assert early.calls == [("replace_all", 0), ("upsert", 1)]
    assert late.calls == [("replace_all", 0), ("upsert", 1), ("upsert", 1)]
    assert reflector.alive()  # the late subscriber still reads it
    late_stop.set()
    reflector.join(5)
    assert not reflector.alive()


def _ignore(keys: Any) -> None:
    del keys
