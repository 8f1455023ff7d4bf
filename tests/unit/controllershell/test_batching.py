"""The pod and PodGroup watches' store: bursts wait for one pass, gates open at once."""

from __future__ import annotations

from typing import Any

from controller.job.shell.batching import BatchingStore
from controller.job.shell.cache import JOB, POD, PODGROUP, Cache
from kubeio.clock import ManualClock
from kubeio.workqueue import WorkQueue
from shared.labels import JOB_NAME_KEY

PERIOD = 0.5


def job() -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns", "uid": "u", "resourceVersion": "1"}}


def pod(i: int, rv: int, node: str | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"j-w-{i}",
            "namespace": "ns",
            "uid": f"p{i}",
            "resourceVersion": str(rv),
            "labels": {JOB_NAME_KEY: "j"},
        },
        "spec": {"nodeName": node} if node else {},
    }


def pod_group(phase: str, rv: int, running: int = 0) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "j-pg",
            "namespace": "ns",
            "uid": "pg",
            "resourceVersion": str(rv),
            "ownerReferences": [{"kind": "Job", "name": "j", "uid": "u"}],
        },
        "status": {"phase": phase, "running": running},
    }


def drain(q: WorkQueue) -> list[str]:
    keys = []
    while (key := q.get(timeout=0)) is not None:
        keys.append(key)
        q.done(key)
    return keys


def setup() -> tuple[ManualClock, WorkQueue, Cache, BatchingStore]:
    clock = ManualClock()
    queue = WorkQueue(clock)
    cache = Cache()
    cache.upsert(JOB, job())
    return clock, queue, cache, BatchingStore(cache, queue, PERIOD)


def test_a_burst_of_pod_changes_is_one_pass_after_the_period() -> None:
    clock, queue, cache, store = setup()
    for i in range(5):
        assert store.upsert(POD, pod(i, 10 + i, "node-1")) is None, "queued here, not at once"
        clock.advance(0.05)
    assert drain(queue) == []
    clock.advance(PERIOD)
    assert drain(queue) == ["ns/j"]
    assert len(cache.view("ns/j").pods) == 5, "the cache holds every change at once"


def test_a_pod_group_admitted_reacts_at_once() -> None:
    clock, queue, _, store = setup()

    def watched(obj: dict[str, Any]) -> str | None:
        key = store.upsert(PODGROUP, obj)
        if key is not None:
            queue.add(key)  # as the reflector does with what the store returns
        return key

    assert watched(pod_group("Pending", 10)) == "ns/j", "created"
    assert drain(queue) == ["ns/j"]
    assert watched(pod_group("Inqueue", 11)) == "ns/j", "admitted"
    assert watched(pod_group("Inqueue", 12, running=2)) is None, "new counts, same phase"
    assert drain(queue) == ["ns/j"], "the admitted pass, which reads the counts too"
    clock.advance(PERIOD)
    assert drain(queue) == [], "no second pass for the counts"


def test_deletions_and_listings_react_at_once() -> None:
    _, _, _, store = setup()
    assert store.replace_all(POD, [pod(0, 10)]) == {"ns/j"}
    assert store.remove(POD, pod(0, 11)) == "ns/j"


def test_a_zero_period_reacts_at_once() -> None:
    clock = ManualClock()
    cache = Cache()
    cache.upsert(JOB, job())
    store = BatchingStore(cache, WorkQueue(clock), 0)
    assert store.upsert(POD, pod(0, 10)) == "ns/j"


def test_an_echo_of_our_own_write_brings_no_pass() -> None:
    _, queue, cache, store = setup()
    cache.store_written(POD, pod(0, 10))
    assert store.upsert(POD, pod(0, 10)) is None
    assert drain(queue) == []
