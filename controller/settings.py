"""The controller's configuration, built once from click options (and their env variables)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Literal

from controller.job.decide.model import PlanSettings
from controller.queues.decide import DefaultQueueSpec

# Pods of one job are created this many at a time (Volcano creates them in parallel too).
CREATE_PARALLELISM = 8
# Connections of the shared pool besides the workers and parallel creates: one per watch (the
# job controller's nine, two for Kueue and two for Kubernetes' own gang; the queue, CronJob and
# PodGroup controllers' eleven) and a couple for leader election and events.
WATCH_CONNECTIONS = 26


def default_identity() -> str:
    """Unique per process, stable for its lifetime: the Lease holder name."""
    return f"{socket.gethostname()}_{os.getpid()}"


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None = None
    workers: int = 4
    leader_elect: bool = True
    lease_namespace: str = "vcjob-system"
    lease_name: str = "vcjob-controller"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = field(default_factory=default_identity)
    gang_schedulers: frozenset[str] = frozenset({"volcano"})
    # Schedulers whose jobs get Kubernetes' own gang where the cluster serves it
    # (docs/native-gang.md); empty: none.
    native_gang_schedulers: frozenset[str] = frozenset({"default-scheduler"})
    request_timeout: float = 10.0
    qps: float = 50.0
    burst: int = 100
    resync_period: float = 30.0
    # Changes that may wait for the rest of their burst wait this long before their job is
    # reconciled (controller.job.decide.urgency, WorkQueue.add_batched).
    event_batch_period: float = 0.5
    health_port: int | None = 8081
    metrics_port: int | None = 8080
    bind_address: str = "0.0.0.0"  # noqa: S104 - probes and scrapes come from outside the pod
    disable_network_policy: bool = False
    ssh_key_type: Literal["rsa", "ed25519"] = "rsa"
    log_level: str = "info"
    log_format: Literal["json", "text"] = "json"
    drain_timeout: float = 10.0
    # Consecutive failures of one job after which it gets a Warning event and a state message.
    failures_before_warning: int = 5
    elastic: bool = True
    elastic_period: float = 30.0
    elastic_dry_run: bool = False
    elastic_max_step: int = 1
    elastic_min_growth: float = 0.0
    elastic_resize_cooldown: float = 0.0
    gpu_resource: str = "nvidia.com/gpu"
    # Watch Kueue's Workloads and ResourceFlavors (a cluster without Kueue serves neither: the
    # watches then idle) and honour the contract of docs/kueue.md.
    kueue: bool = True
    # Volcano's `--controllers` gates (see controller.gates).
    controllers: tuple[str, ...] = ("*",)
    inherit_owner_annotations: bool = True
    # The `default` Queue the queue controller creates when it is missing (None: never).
    default_queue: DefaultQueueSpec | None = field(default_factory=DefaultQueueSpec)

    def plan_settings(self) -> PlanSettings:
        return PlanSettings(
            gang_schedulers=self.gang_schedulers,
            native_gang_schedulers=self.native_gang_schedulers,
            disable_network_policy=self.disable_network_policy,
            ssh_key_type=self.ssh_key_type,
            kueue=self.kueue,
        )

    @property
    def pool_size(self) -> int:
        """Connections of the process's client pool: the watches, the workers, the parallel
        creates."""
        return WATCH_CONNECTIONS + self.workers + 2 * CREATE_PARALLELISM
