"""Queues in the job controller's cache: a Queue that appears, goes or changes state brings the
jobs submitted to it; its counts changing brings none."""

from __future__ import annotations

from typing import Any

from controller.job.shell.cache import QUEUE, Cache
from controller.job.shell.queuewatch import QueueStore


def queue(name: str, version: int, state: str, running: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": str(version)},
        "status": {"state": state, "running": running},
    }


def job(name: str, queue_name: str | None) -> dict[str, Any]:
    spec = {"queue": queue_name} if queue_name else {}
    return {"metadata": {"namespace": "ns", "name": name, "uid": name}, "spec": spec}


def store() -> tuple[QueueStore, Cache, list[str]]:
    cache = Cache()
    for j in (job("a", "q"), job("b", "q"), job("c", None), job("d", "other")):
        cache.upsert("Job", j)
    enqueued: list[str] = []
    return QueueStore(cache, enqueued.extend), cache, enqueued


def test_a_state_change_brings_the_queues_jobs() -> None:
    queues, cache, enqueued = store()
    queues.upsert(QUEUE, queue("q", 1, "Open"))
    assert sorted(enqueued) == ["ns/a", "ns/b"]
    enqueued.clear()
    queues.upsert(QUEUE, queue("q", 2, "Open", running=3))
    assert enqueued == []
    queues.upsert(QUEUE, queue("q", 3, "Closed"))
    assert sorted(enqueued) == ["ns/a", "ns/b"]
    assert (cache.get(QUEUE, "q") or {})["status"]["state"] == "Closed"


def test_jobs_naming_no_queue_are_the_default_queues() -> None:
    queues, _cache, enqueued = store()
    queues.upsert(QUEUE, queue("default", 1, "Open"))
    assert enqueued == ["ns/c"]


def test_a_deleted_queue_brings_its_jobs() -> None:
    queues, cache, enqueued = store()
    queues.upsert(QUEUE, queue("q", 1, "Open"))
    enqueued.clear()
    queues.remove(QUEUE, queue("q", 1, "Open"))
    assert sorted(enqueued) == ["ns/a", "ns/b"]
    assert cache.get(QUEUE, "q") is None


def test_a_relist_brings_the_jobs_of_the_queues_that_changed_meanwhile() -> None:
    queues, cache, _enqueued = store()
    queues.replace_all(QUEUE, [queue("q", 1, "Open"), queue("other", 1, "Open")])
    touched = queues.replace_all(QUEUE, [queue("q", 5, "Closed"), queue("other", 6, "Open", 4)])
    assert sorted(touched) == ["ns/a", "ns/b"]
    touched = queues.replace_all(QUEUE, [queue("q", 5, "Closed")])
    assert touched == {"ns/d"}
    assert [q["metadata"]["name"] for q in cache.queues()] == ["q"]
