"""The controller process's manager: peers started in order and stopped in reverse, probes
that answer for every peer that has a state, leadership handed to the peers that act on it."""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from controller.cli import add_controllers
from controller.keyworkers import KeyWorkers
from controller.manager import Manager
from controller.metrics import CONTROLLER
from controller.settings import Settings
from kubeio.client import JOBS, PODGROUPS, PODS, ApiClient
from kubeio.informer import Reflector, WatchSpec


class Peer:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def start(self) -> None:
        self.log.append(f"start {self.name}")

    def shutdown(self) -> None:
        self.log.append(f"stop {self.name}")


class CheckedPeer(Peer):
    def __init__(self, name: str, log: list[str]) -> None:
        super().__init__(name, log)
        self.health = (True, "")
        self.ready = (False, f"caches not synced: {name}")

    def healthz(self) -> tuple[bool, str]:
        return self.health

    def readyz(self) -> tuple[bool, str]:
        return self.ready


class LeadingPeer(Peer):
    def started_leading(self) -> None:
        self.log.append(f"leads {self.name}")

    def stopped_leading(self) -> None:
        self.log.append(f"follows {self.name}")


def manager(leader_elect: bool = False) -> Manager:
    settings = Settings(leader_elect=leader_elect, health_port=None, metrics_port=None, workers=1)
    return Manager(settings, ApiClient())


def test_peers_start_in_order_and_stop_in_reverse() -> None:
    log: list[str] = []
    m = manager()
    first = m.add(Peer("jobs", log))
    m.add(Peer("queues", log))
    assert first.name == "jobs", "add returns the peer"
    m.start()
    m.shutdown()
    assert log == ["start jobs", "start queues", "stop queues", "stop jobs"]


def test_probes_answer_with_the_first_peer_that_is_not_ok() -> None:
    log: list[str] = []
    m = manager()
    m.add(Peer("no state", log))
    jobs = m.add(CheckedPeer("jobs", log))
    queues = m.add(CheckedPeer("queues", log))
    assert m.healthz() == (True, "")
    assert m.readyz() == (False, "caches not synced: jobs")
    jobs.ready = (True, "")
    assert m.readyz() == (False, "caches not synced: queues")
    queues.ready = (True, "")
    assert m.readyz() == (True, "")
    queues.health = (False, "a worker thread stopped")
    assert m.healthz() == (False, "a worker thread stopped")


def test_without_election_the_process_leads_and_says_so() -> None:
    m = manager()
    assert m.is_leader()
    m.start()
    try:
        assert (
            m.metrics.registry.get_sample_value(
                "leader_election_master_status", {"name": CONTROLLER}
            )
            == 1
        )
    finally:
        m.shutdown()


def test_with_election_nobody_leads_before_the_lease_is_won() -> None:
    m = manager(leader_elect=True)
    assert m.elector is not None
    assert not m.is_leader()


def test_endpoints_serve_the_peers_probes_and_the_shared_registry() -> None:
    log: list[str] = []
    m = Manager(
        Settings(
            leader_elect=False,
            health_port=0,
            metrics_port=0,
            bind_address="127.0.0.1",
            workers=1,
        ),
        ApiClient(),
    )
    jobs = m.add(CheckedPeer("jobs", log))
    m.start()
    try:
        assert m.endpoints is not None and m.endpoints.health_port and m.endpoints.metrics_port
        health = f"http://127.0.0.1:{m.endpoints.health_port}"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{health}/readyz", timeout=5)  # noqa: S310
        assert refused.value.code == 503
        jobs.ready = (True, "")
        with urllib.request.urlopen(f"{health}/readyz", timeout=5) as answer:  # noqa: S310
            assert answer.status == 200
        metrics = f"http://127.0.0.1:{m.endpoints.metrics_port}/metrics"
        with urllib.request.urlopen(metrics, timeout=5) as answer:
            assert f'leader_election_master_status{{name="{CONTROLLER}"}} 1.0' in (
                answer.read().decode()
            )
    finally:
        m.shutdown()
    assert log == ["start jobs", "stop jobs"]


class Answer:
    """What urllib3 answers: a 201 with a created object."""

    status = 201
    reason = "Created"
    data = b'{"metadata": {"name": "p"}}'


def test_every_request_the_process_sends_is_counted_writes_included(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = manager()
    sent: list[str] = []

    def answer(method: str, url: str, **kwargs: object) -> Answer:
        sent.append(method)
        return Answer()

    monkeypatch.setattr(m.api_client.rest_client.pool_manager, "request", answer)
    m.kube.create(PODS, "default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert sent == ["POST"]
    host = urlsplit(str(m.api_client.configuration.host)).netloc
    counted = m.metrics.registry.get_sample_value(
        "rest_client_requests_total", {"code": "201", "method": "POST", "host": host}
    )
    assert counted == 1


def test_the_controllers_of_a_process_share_one_watch_per_resource_and_selector() -> None:
    m = manager()
    jobs = add_controllers(m.settings, m)
    informers = [i for p in m.peers if isinstance(p, KeyWorkers) for i in p.informers()]
    reflectors = [*jobs.reflectors, *(i.reflector for i in informers)]
    by_spec: dict[WatchSpec, set[int]] = {}
    for reflector in reflectors:
        by_spec.setdefault(reflector.spec, set()).add(id(reflector))
    assert all(len(ids) == 1 for ids in by_spec.values()), by_spec

    def readers(spec: WatchSpec) -> list[Reflector]:
        return [r for r in reflectors if r.spec == spec]

    # Jobs: the Job, CronJob and JobFlow controllers; PodGroups: the Job, Queue and PodGroup ones.
    assert len(readers(WatchSpec(JOBS))) == 3
    assert len(readers(WatchSpec(PODGROUPS))) == 3
