"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's timings.

The holder renews every `retry_period`; it steps down when it could not renew for
`renew_deadline`. A candidate takes the Lease over once `lease_duration` has passed since the
holder's last renewal as observed locally (clocks of different replicas are never compared).
On shutdown the holder releases the Lease by clearing `holderIdentity`, so a successor does not
wait for the expiry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from kubeio.client import LEASES
from kubeio.clock import Clock, RealClock
from kubeio.errors import AlreadyExistsError, ConflictError, KubeError, NotFoundError
from kubeio.kubelike import KubeLike
from shared.wire import WireObject, spec_of

log = logging.getLogger(__name__)


class LeaseApi(Protocol):
    def get(self, namespace: str, name: str) -> WireObject | None: ...

    def create(self, namespace: str, body: WireObject) -> WireObject: ...

    def replace(self, namespace: str, body: WireObject) -> WireObject: ...


@dataclass(frozen=True)
class LeaderConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def _micro_time(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: LeaseApi,
        config: LeaderConfig,
        clock: Clock | None = None,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
    ) -> None:
        self._api = api
        self._config = config
        self._clock: Clock = clock or RealClock()
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._leading = False
        self._last_renew = 0.0
        # What we last saw of somebody else's lease, and when (our monotonic clock).
        self._observed_record: tuple[str, str, int] | None = None
        self._observed_at = 0.0
        self._expires_in: float | None = None
        self._lock = threading.Lock()

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def identity(self) -> str:
        return self._config.identity

    def try_acquire_or_renew(self) -> bool:
        """One election round; returns whether we hold the Lease afterwards."""
        with self._lock:
            ok = self._round()
            now = self._clock.monotonic()
            if ok:
                self._last_renew = now
                if not self._leading:
                    self._leading = True
                    log.info("leadership acquired", extra={"identity": self._config.identity})
                    self._on_started()
            elif self._leading and now - self._last_renew >= self._config.renew_deadline:
                self._leading = False
                log.warning("leadership lost", extra={"identity": self._config.identity})
                self._on_stopped()
            return self._leading

    def _lease_age(self, spec: WireObject) -> float:
        """How long ago the holder renewed: our own observation, or the lease's renewTime when
        that is older and plausible (not in our future), so a successor does not add the
        observation lag to the lease duration. The leader's renew deadline (10 s) under the
        lease duration (15 s) leaves 5 s for clock skew."""
        local_age = self._clock.monotonic() - self._observed_at
        renew_time = spec.get("renewTime")
        if not isinstance(renew_time, str):
            return local_age
        try:
            renewed = datetime.fromisoformat(renew_time.replace("Z", "+00:00"))
        except ValueError:
            return local_age
        wall_age = (self._clock.now() - renewed).total_seconds()
        return max(local_age, wall_age) if wall_age >= 0 else local_age

    def next_wait(self) -> float:
        """Seconds until the next round: the retry period, or sooner when a lease expires."""
        wait = self._config.retry_period
        if not self._leading and self._expires_in is not None:
            wait = min(wait, max(0.05, self._expires_in))
        return wait

    def _spec(self, transitions: int, acquire_time: str) -> WireObject:
        return {
            "holderIdentity": self._config.identity,
            "leaseDurationSeconds": int(self._config.lease_duration),
            "acquireTime": acquire_time,
            "renewTime": _micro_time(self._clock.now()),
            "leaseTransitions": transitions,
        }

    def _round(self) -> bool:
        cfg = self._config
        self._expires_in = None
        try:
            lease = self._api.get(cfg.namespace, cfg.name)
            now_text = _micro_time(self._clock.now())
            if lease is None:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                    "spec": self._spec(0, now_text),
                }
                self._api.create(cfg.namespace, body)
                return True
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            transitions = int(spec.get("leaseTransitions") or 0)
            record = (holder, str(spec.get("renewTime") or ""), transitions)
            if record != self._observed_record:
                self._observed_record = record
                self._observed_at = self._clock.monotonic()
            if holder and holder != cfg.identity:
                duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
                age = self._lease_age(spec)
                if age < duration:
                    self._expires_in = duration - age
                    return False
            if holder == cfg.identity:
                acquire = str(spec.get("acquireTime") or now_text)
            else:
                transitions += 1
                acquire = now_text
            lease["spec"] = self._spec(transitions, acquire)
            self._api.replace(cfg.namespace, lease)
            return True
        except (ConflictError, AlreadyExistsError):
            return False  # another candidate wrote first
        except NotFoundError as exc:
            log.warning(
                "lease cannot be written, does its namespace exist?",
                extra={"namespace": cfg.namespace, "error": str(exc)},
            )
            return False
        except KubeError as exc:
            log.warning("lease update failed", extra={"error": str(exc)})
            return False

    def run(self, stop: threading.Event) -> None:
        """Campaign and renew until `stop` is set, then release the Lease if we hold it."""
        while not stop.is_set():
            self.try_acquire_or_renew()
            stop.wait(self.next_wait())
        self.release()

    def release(self) -> None:
        with self._lock:
            if not self._leading:
                return
            self._leading = False
            cfg = self._config
            try:
                lease = self._api.get(cfg.namespace, cfg.name)
                spec = spec_of(lease)
                if lease is not None and spec.get("holderIdentity") == cfg.identity:
                    spec["holderIdentity"] = None
                    spec["leaseDurationSeconds"] = 1
                    spec["renewTime"] = _micro_time(self._clock.now())
                    lease["spec"] = spec
                    self._api.replace(cfg.namespace, lease)
                    log.info("leadership released", extra={"identity": cfg.identity})
            except KubeError as exc:
                log.warning("lease release failed", extra={"error": str(exc)})
            self._on_stopped()


class KubeLeaseApi:
    """`LeaseApi` over `kubeio.client.Kube` (any `KubeLike`)."""

    def __init__(self, kube: KubeLike) -> None:
        self._kube = kube
        self._res = LEASES

    def get(self, namespace: str, name: str) -> WireObject | None:
        return self._kube.get_or_none(self._res, namespace, name)

    def create(self, namespace: str, body: WireObject) -> WireObject:
        return self._kube.create(self._res, namespace, body)

    def replace(self, namespace: str, body: WireObject) -> WireObject:
        return self._kube.replace(self._res, namespace, body)
