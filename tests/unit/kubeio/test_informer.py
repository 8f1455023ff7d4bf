"""The list+watch loop: resume from the last resourceVersion, bookmarks, re-list on 410."""

from __future__ import annotations

import threading
from typing import Any

from controller.job.shell.cache import Cache
from kubeio.client import PODS
from kubeio.errors import NotFoundError, TransientError
from kubeio.informer import Reflector, WatchSpec
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
