"""The controller process: what its controllers share and what it runs for all of them.

One client pool, one set of watches, one metrics registry, one event recorder, one leader election
and the health and metrics endpoints belong to the process; the Job, CronJob, Queue, JobFlow and
PodGroup controllers are peers that receive them, start and stop in order, and act only while
`is_leader()`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Protocol, TypeVar, runtime_checkable

from controller.leader import KubeLeaseApi, LeaderConfig, LeaderElector
from controller.metrics import CONTROLLER, Metrics
from controller.server import HttpEndpoints
from controller.settings import Settings
from kubeio.client import ApiClient, Kube, pooled_copy
from kubeio.clock import Clock, RealClock
from kubeio.events import EventRecorder
from kubeio.informer import SharedWatches
from shared.logging import announce

log = logging.getLogger(__name__)


class Peer(Protocol):
    """A controller the manager runs."""

    def start(self) -> None: ...

    def shutdown(self) -> None: ...


@runtime_checkable
class Checked(Protocol):
    """A peer whose state decides /healthz and /readyz: (ok, why not)."""

    def healthz(self) -> tuple[bool, str]: ...

    def readyz(self) -> tuple[bool, str]: ...


@runtime_checkable
class LeadershipAware(Protocol):
    """A peer that acts when this process wins or loses the Lease."""

    def started_leading(self) -> None: ...

    def stopped_leading(self) -> None: ...


P = TypeVar("P", bound=Peer)


class Manager:
    def __init__(self, settings: Settings, api_client: ApiClient, clock: Clock | None = None):
        self.settings = settings
        self.clock: Clock = clock or RealClock()
        self.metrics = Metrics()
        self.api_client = pooled_copy(api_client, settings.pool_size)
        self.kube = Kube(
            self.api_client,
            qps=settings.qps,
            burst=settings.burst,
            request_timeout=settings.request_timeout,
        )
        # Every request of the process goes through this pooled client: count it. Counted
        # after `Kube` took it, whose own way for encoded bodies (every write) would pass by
        # a counter installed before.
        self.metrics.count_rest_requests(self.api_client)
        self.recorder = EventRecorder(self.kube, settings.identity, self.clock, asynchronous=True)
        # One watch per resource for all the controllers (the Job, CronJob and JobFlow
        # controllers all read Jobs; three of them read PodGroups): each change decoded once.
        self.watches = SharedWatches(self.kube)
        self.elector: LeaderElector | None = None
        if settings.leader_elect:
            self.elector = LeaderElector(
                KubeLeaseApi(self.kube),
                LeaderConfig(
                    namespace=settings.lease_namespace,
                    name=settings.lease_name,
                    identity=settings.identity,
                    lease_duration=settings.lease_duration,
                    renew_deadline=settings.renew_deadline,
                    retry_period=settings.retry_period,
                ),
                self.clock,
                on_started_leading=self._started_leading,
                on_stopped_leading=self._stopped_leading,
            )
        self.endpoints: HttpEndpoints | None = None
        self._peers: list[Peer] = []
        self._leader_stop = threading.Event()
        self._leader_thread: threading.Thread | None = None

    def add(self, peer: P) -> P:
        """Run `peer` with the others: started in the order added, stopped in reverse."""
        self._peers.append(peer)
        return peer

    @property
    def peers(self) -> tuple[Peer, ...]:
        return tuple(self._peers)

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def _started_leading(self) -> None:
        self.metrics.is_leader.labels(CONTROLLER).set(1)
        for peer in self._peers:
            if isinstance(peer, LeadershipAware):
                peer.started_leading()

    def _stopped_leading(self) -> None:
        self.metrics.is_leader.labels(CONTROLLER).set(0)
        for peer in self._peers:
            if isinstance(peer, LeadershipAware):
                peer.stopped_leading()

    def healthz(self) -> tuple[bool, str]:
        return _first_failing(peer.healthz() for peer in self._peers if isinstance(peer, Checked))

    def readyz(self) -> tuple[bool, str]:
        return _first_failing(peer.readyz() for peer in self._peers if isinstance(peer, Checked))

    def start(self) -> None:
        """Endpoints first (probes answer while the caches fill), then the peers, then the
        election: a peer acts once this process leads."""
        s = self.settings
        if s.health_port is not None or s.metrics_port is not None:
            self.endpoints = HttpEndpoints(
                s.bind_address,
                s.health_port,
                s.metrics_port,
                self.healthz,
                self.readyz,
                self.metrics.registry,
            )
            self.endpoints.start()
            health, metrics = self.endpoints.health_port, self.endpoints.metrics_port
            # Logged at any level: with port 0 the log is where tools find the ports.
            announce(
                log,
                f"controller health port {health} metrics port {metrics}",
                health_port=health,
                metrics_port=metrics,
            )
        for peer in self._peers:
            peer.start()
        if self.elector is not None:
            elector = self.elector
            self._leader_thread = threading.Thread(
                target=lambda: elector.run(self._leader_stop), name="leader", daemon=True
            )
            self._leader_thread.start()
        else:
            self.metrics.is_leader.labels(CONTROLLER).set(1)

    def shutdown(self) -> None:
        """Peers in reverse order (each drains its work), then the Lease is released, the
        pending events written and the endpoints and the pool closed."""
        for peer in reversed(self._peers):
            peer.shutdown()
        self._leader_stop.set()
        if self._leader_thread is not None:
            self._leader_thread.join(timeout=self.settings.drain_timeout)
        if self.elector is not None:
            self.elector.release()
        self.recorder.close(timeout=self.settings.drain_timeout)
        if self.endpoints is not None:
            self.endpoints.stop()
        self.api_client.close()  # type: ignore[no-untyped-call]


def _first_failing(checks: Iterable[tuple[bool, str]]) -> tuple[bool, str]:
    for ok, why in checks:
        if not ok:
            return False, why
    return True, ""
