"""Leader election over a fake Lease API with a manual clock."""

from __future__ import annotations

import copy
from typing import Any

from controller.leader import LeaderConfig, LeaderElector
from kubeio.clock import ManualClock
from kubeio.errors import AlreadyExistsError, ConflictError, TransientError


class FakeLeases:
    """An API server's optimistic concurrency for one Lease: stale resourceVersions conflict."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.down = False

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        if self.down:
            raise TransientError("server down", 503)
        return copy.deepcopy(self.lease)

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.down:
            raise TransientError("server down", 503)
        if self.lease is not None:
            raise AlreadyExistsError("exists", 409, "AlreadyExists")
        self.rv += 1
        body["metadata"]["resourceVersion"] = str(self.rv)
        self.lease = copy.deepcopy(body)
        return body

    def replace(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.down:
            raise TransientError("server down", 503)
        assert self.lease is not None
        if body["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            raise ConflictError("stale", 409, "Conflict")
        self.rv += 1
        body["metadata"]["resourceVersion"] = str(self.rv)
        self.lease = copy.deepcopy(body)
        return body

    @property
    def holder(self) -> str | None:
        return None if self.lease is None else self.lease["spec"].get("holderIdentity")


def elector(api: FakeLeases, clock: ManualClock, identity: str) -> LeaderElector:
    config = LeaderConfig(namespace="vcjob-system", name="vcjob-controller", identity=identity)
    return LeaderElector(api, config, clock)


def test_first_candidate_creates_the_lease_and_leads(clock: ManualClock) -> None:
    api = FakeLeases()
    a = elector(api, clock, "a")
    assert a.try_acquire_or_renew()
    assert a.is_leader
    assert api.holder == "a"
    assert api.lease is not None
    assert api.lease["spec"]["leaseDurationSeconds"] == 15


def test_holder_renews_and_others_wait(clock: ManualClock) -> None:
    api = FakeLeases()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.try_acquire_or_renew()
    for _ in range(20):
        clock.advance(2)
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew(), "a renewed in time"
    assert api.holder == "a"


def test_candidate_takes_over_only_after_the_lease_expired(clock: ManualClock) -> None:
    api = FakeLeases()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b first sees a's record now
    clock.advance(14)
    assert not b.try_acquire_or_renew(), "14 s < lease duration"
    clock.advance(1.5)
    assert b.try_acquire_or_renew()
    assert api.holder == "b"
    assert api.lease is not None
    assert api.lease["spec"]["leaseTransitions"] == 1


def test_leader_steps_down_when_it_cannot_renew_within_the_deadline(clock: ManualClock) -> None:
    api = FakeLeases()
    stopped: list[bool] = []
    config = LeaderConfig(namespace="ns", name="l", identity="a")
    a = LeaderElector(api, config, clock, on_stopped_leading=lambda: stopped.append(True))
    a.try_acquire_or_renew()
    api.down = True
    clock.advance(9)
    assert a.try_acquire_or_renew(), "still leading inside the renew deadline"
    clock.advance(1.5)
    assert not a.try_acquire_or_renew()
    assert stopped == [True]


def test_release_clears_the_holder_so_a_successor_need_not_wait(clock: ManualClock) -> None:
    api = FakeLeases()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a.release()
    assert not a.is_leader
    assert api.holder is None
    assert b.try_acquire_or_renew(), "no expiry wait after a release"


def test_release_does_not_touch_a_lease_held_by_someone_else(clock: ManualClock) -> None:
    api = FakeLeases()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    clock.advance(16)
    assert b.try_acquire_or_renew()
    a.release()  # a still believed it led
    assert api.holder == "b"


def test_concurrent_takeover_has_one_winner(clock: ManualClock) -> None:
    api = FakeLeases()
    a, b, c = (elector(api, clock, n) for n in "abc")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    c.try_acquire_or_renew()
    clock.advance(16)
    won = [b.try_acquire_or_renew(), c.try_acquire_or_renew()]
    assert won == [True, False]
    assert api.holder == "b"


def test_a_stale_renew_time_shortens_the_wait_to_the_real_expiry(clock: ManualClock) -> None:
    api = FakeLeases()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.try_acquire_or_renew()
    clock.advance(10)  # a died right after renewing; b looks for the first time 10 s later
    assert not b.try_acquire_or_renew()
    assert b.next_wait() == 2.0
    clock.advance(4)
    assert not b.try_acquire_or_renew()
    assert b.next_wait() == 1.0, "wake up exactly when the lease expires"
    clock.advance(1)
    assert b.try_acquire_or_renew(), "15 s after a's last renewal, not 15 s after b first looked"


def test_a_renew_time_in_the_future_falls_back_to_local_observation(clock: ManualClock) -> None:
    api = FakeLeases()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    clock.advance(100)
    a.try_acquire_or_renew()  # a's clock is 100 s ahead of b's
    clock.advance(-100)
    assert not b.try_acquire_or_renew()
    clock.advance(14)
    assert not b.try_acquire_or_renew()
    clock.advance(1)
    assert b.try_acquire_or_renew()
