"""The Queue cache: list, then watch; re-list on 410; a missing CRD turns the check off."""

from __future__ import annotations

import queue as stdqueue
import threading
from collections.abc import Iterator
from typing import Any

from tests.support import wait_until
from webhook.queuecache import QueueCache, QueueCRDMissingError, WatchExpiredError

TIMEOUT = 5.0


def q(name: str, rv: str, state: str | None = "Open", parent: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "resourceVersion": rv}, "spec": {}}
    if state:
        obj["status"] = {"state": state}
    if parent:
        obj["spec"]["parent"] = parent
    return obj


class FakeSource:
    """Scripted lists and watch streams; each watch stream is a queue of events (None ends it,
    an exception instance is raised)."""

    def __init__(self) -> None:
        self.lists: stdqueue.Queue[Any] = stdqueue.Queue()
        self.events: stdqueue.Queue[Any] = stdqueue.Queue()
        self.list_calls = 0
        self.watched_from: list[str] = []
        self.listed = threading.Event()
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()
        self.events.put(None)

    def list(self) -> tuple[list[dict[str, Any]], str]:
        self.list_calls += 1
        if self.closed.is_set():
            raise RuntimeError("closed")
        result = self.lists.get(timeout=TIMEOUT)
        self.listed.set()
        if isinstance(result, Exception):
            raise result
        items, rv = result
        return items, rv

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[dict[str, Any]]:
        self.watched_from.append(resource_version)
        while not self.closed.is_set():
            event = self.events.get(timeout=TIMEOUT)
            if event is None:
                return
            if isinstance(event, Exception):
                raise event
            yield event


def wait_for(condition: Any) -> None:
    wait_until("the cache to catch up", condition, TIMEOUT, interval=0.01)


def test_lists_then_follows_the_watch() -> None:
    source = FakeSource()
    source.lists.put(
        ([q("default", "1"), q("parent", "2"), q("child", "3", parent="parent")], "10")
    )
    cache = QueueCache(source)
    cache.start()
    try:
        assert cache.wait_synced(TIMEOUT)
        assert cache.crd_installed
        assert cache.get("default") is not None
        assert cache.children("parent") == ["child"]
        source.events.put({"type": "ADDED", "object": q("gpu", "11", state="Closed")})
        source.events.put({"type": "DELETED", "object": q("child", "12")})
        source.events.put({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "13"}}})
        wait_for(lambda: cache.get("gpu") is not None and cache.children("parent") == [])
        gpu = cache.get("gpu")
        assert gpu is not None
        assert not gpu.is_open
        source.events.put(None)  # the watch times out: resume from the last version seen
        wait_for(lambda: source.watched_from == ["10", "13"])
    finally:
        source.close()
        cache.stop()


def test_relists_when_the_watch_expires() -> None:
    source = FakeSource()
    source.lists.put(([q("a", "1")], "5"))
    source.lists.put(([q("b", "7")], "8"))
    cache = QueueCache(source)
    cache.start()
    try:
        assert cache.wait_synced(TIMEOUT)
        source.events.put({"type": "ERROR", "object": {"code": 410, "message": "too old"}})
        wait_for(lambda: cache.get("b") is not None and cache.get("a") is None)
        assert source.list_calls == 2
    finally:
        source.close()
        cache.stop()


def test_a_missing_crd_is_synced_but_not_installed() -> None:
    source = FakeSource()
    source.lists.put(QueueCRDMissingError())
    source.lists.put(([q("default", "1")], "2"))
    cache = QueueCache(source, missing_crd_recheck=0.05)
    cache.start()
    try:
        assert cache.wait_synced(TIMEOUT)
        wait_for(lambda: cache.crd_installed and cache.get("default") is not None)
    finally:
        source.close()
        cache.stop()


def test_errors_are_retried_and_unreadable_queues_skipped() -> None:
    source = FakeSource()
    source.lists.put(RuntimeError("connection refused"))
    source.lists.put(([q("ok", "1"), {"metadata": {"name": "bad"}, "spec": {"weight": "x"}}], "2"))
    cache = QueueCache(source)
    cache.start()
    try:
        assert cache.wait_synced(TIMEOUT)
        assert cache.get("ok") is not None
        assert cache.get("bad") is None
        source.events.put(WatchExpiredError())
        source.lists.put(([q("ok", "3")], "4"))
        wait_for(lambda: source.list_calls == 3)
    finally:
        source.close()
        cache.stop()


def test_hierarchies_are_read_from_the_cached_annotations() -> None:
    source = FakeSource()
    tagged = q("a", "1")
    tagged["metadata"]["annotations"] = {"volcano.sh/hierarchy": "root/a"}
    source.lists.put(([tagged, q("b", "2")], "5"))
    cache = QueueCache(source)
    cache.start()
    try:
        assert cache.wait_synced(TIMEOUT)
        assert cache.hierarchies() == {"a": "root/a"}
    finally:
        source.close()
        cache.stop()
