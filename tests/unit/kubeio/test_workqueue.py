"""Work queue semantics (client-go): collapse, per-key serialisation, backoff, delays, drain."""

from __future__ import annotations

import threading

import pytest

from kubeio.clock import ManualClock as FakeClock
from kubeio.workqueue import RateLimits, WorkQueue


def drain_now(q: WorkQueue) -> list[str]:
    keys = []
    while (key := q.get(timeout=0)) is not None:
        keys.append(key)
    return keys


def test_identical_pending_keys_collapse(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    for key in ["a", "b", "a", "a", "c", "b"]:
        q.add(key)
    assert drain_now(q) == ["a", "b", "c"]


def test_a_key_is_never_handed_to_two_workers_at_once(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add("a")
    assert q.get(timeout=0) == "a"
    q.add("a")  # changed while a worker holds it
    assert q.get(timeout=0) is None, "the second add must wait for done()"
    q.done("a")
    assert q.get(timeout=0) == "a", "re-queued once the worker finished"
    q.done("a")
    assert q.get(timeout=0) is None


def test_adds_during_processing_collapse_into_one_rerun(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add("a")
    q.get(timeout=0)
    q.add("a")
    q.add("a")
    q.done("a")
    assert drain_now(q) == ["a"]


@pytest.mark.parametrize(
    ("failures", "expected"),
    [
        pytest.param(1, 0.005, id="first retry 5ms"),
        pytest.param(2, 0.010, id="doubles"),
        pytest.param(5, 0.080, id="fifth"),
        pytest.param(30, 1000.0, id="capped at 1000s"),
        pytest.param(200, 1000.0, id="stays capped"),
    ],
)
def test_per_item_backoff_grows_exponentially_and_is_capped(
    clock: FakeClock, failures: int, expected: float
) -> None:
    q = WorkQueue(clock, RateLimits(qps=1e9, burst=10**9))
    for _ in range(failures - 1):
        q.add_rate_limited("a")
        clock.advance(10_000)
        assert q.get(timeout=0) == "a"
        q.done("a")
    q.add_rate_limited("a")
    clock.advance(expected * 0.99)
    assert q.get(timeout=0) is None, "not before its backoff"
    clock.advance(expected * 0.02)
    assert q.get(timeout=0) == "a"
    assert q.num_requeues("a") == failures


def test_forget_resets_the_backoff(clock: FakeClock) -> None:
    q = WorkQueue(clock, RateLimits(qps=1e9, burst=10**9))
    for _ in range(10):
        q.add_rate_limited("a")
    q.forget("a")
    assert q.num_requeues("a") == 0
    clock.advance(1000)
    assert drain_now(q) == ["a"]
    q.done("a")
    q.add_rate_limited("a")
    clock.advance(0.006)
    assert q.get(timeout=0) == "a"


def test_overall_token_bucket_limits_retries_of_many_keys(clock: FakeClock) -> None:
    q = WorkQueue(clock, RateLimits(qps=10, burst=2))
    for key in ["a", "b", "c", "d"]:
        q.add_rate_limited(key)
    clock.advance(0.01)
    assert sorted(drain_now(q)) == ["a", "b"], "the burst passes at once"
    clock.advance(0.1)
    assert drain_now(q) == ["c"]
    clock.advance(0.1)
    assert drain_now(q) == ["d"]


def test_add_after_releases_keys_in_time_order(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add_after("late", 3)
    q.add_after("early", 1)
    q.add_after("middle", 2)
    assert drain_now(q) == []
    clock.advance(1.5)
    assert drain_now(q) == ["early"]
    clock.advance(5)
    assert drain_now(q) == ["middle", "late"]


def test_add_after_keeps_the_earliest_time_for_a_key(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add_after("a", 10)
    q.add_after("a", 1)
    q.add_after("a", 5)
    clock.advance(1)
    assert drain_now(q) == ["a"]
    clock.advance(20)
    assert drain_now(q) == [], "the superseded entries do not fire again"


def test_a_burst_of_batched_changes_is_one_turn_after_the_period(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    for _ in range(5):
        q.add_batched("a", 0.5)
        clock.advance(0.05)
    assert drain_now(q) == [], "the burst is still inside the period"
    clock.advance(0.3)
    assert drain_now(q) == ["a"]
    q.done("a")
    clock.advance(5)
    assert drain_now(q) == [], "one turn for the whole burst"


def test_a_batched_change_to_a_queued_key_waits_for_nothing(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add("a")
    q.add_batched("a", 0.5)
    assert drain_now(q) == ["a"], "the queued turn reads the change"
    q.done("a")
    clock.advance(1)
    assert drain_now(q) == [], "and no second turn follows"


def test_a_batched_change_during_a_turn_brings_another_turn(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add("a")
    assert q.get(timeout=0) == "a"
    q.add_batched("a", 0.5)  # the running turn may have read the cache before the change
    q.done("a")
    assert drain_now(q) == []
    clock.advance(0.5)
    assert drain_now(q) == ["a"]


def test_a_batched_change_brings_a_later_delayed_turn_forward(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add_after("a", 30)
    q.add_batched("a", 0.5)
    clock.advance(0.5)
    assert drain_now(q) == ["a"]


def test_shutdown_drains_queued_keys_then_returns_none(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add("a")
    q.add("b")
    q.add_after("parked", 1)
    q.shutdown(drain=True)
    q.add("c")
    assert drain_now(q) == ["a", "b"]
    q.done("a")
    q.done("b")
    assert q.get(timeout=0) is None
    assert q.wait_idle(timeout=0.1)


def test_shutdown_without_drain_drops_keys(clock: FakeClock) -> None:
    q = WorkQueue(clock)
    q.add("a")
    q.shutdown(drain=False)
    assert q.get(timeout=0) is None


def test_blocked_workers_wake_up_on_shutdown() -> None:
    q = WorkQueue()
    results: list[str | None] = []
    worker = threading.Thread(target=lambda: results.append(q.get()))
    worker.start()
    q.shutdown()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert results == [None]


def test_wait_idle_waits_for_in_flight_keys() -> None:
    q = WorkQueue()
    q.add("a")
    assert q.get(timeout=1) == "a"
    q.shutdown()
    assert not q.wait_idle(timeout=0.05)
    q.done("a")
    assert q.wait_idle(timeout=1)
