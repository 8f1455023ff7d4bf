"""What `vcjob local up` was asked for: the cluster's folder, port, nodes and which vcjob
processes run (read by `localcluster.up` to start them and by `localcluster.banner` to describe
them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from localcluster.bootstrap import DEFAULT_CRDS_DIR
from localcluster.clusterdir import KUBE_CACHE_DIR, KUBECONFIG_FILE, LOG_DIR
from localcluster.multikueue import Worker
from localcluster.simulator import nodes as simulated_nodes


@dataclass(frozen=True)
class UpOptions:
    dir: Path
    port: int = 6443
    simulator: bool = True
    controller: bool = True
    # Kueue's CRDs and manager, started before the controller (localcluster.kueue).
    kueue: bool = False
    webhook: bool = True
    nodes: int = 3
    node_shape: simulated_nodes.NodeShape = field(default_factory=simulated_nodes.NodeShape)
    pod_runtime: str = "5s"
    fault_rate: float = 0.0
    fault_seed: int | None = None
    data_dir: Path | None = None
    elastic_period: str = "30s"
    log_format: str = "json"
    crds_dir: Path = DEFAULT_CRDS_DIR
    # A fresh cluster for `helm install`: no CRDs, vcjob-system, Queue, webhook or controller.
    bare: bool = False
    audit_log: Path | None = None
    # REPOSITORY=COMMAND: pods of that image run as real processes (see simulator/images.py).
    run_images: tuple[str, ...] = ()
    # Volcano's alpha feature gates for the webhook (shared.featuregates), `Name=true,…`.
    feature_gates: str = ""
    # Another gang scheduler (Volcano's vc-scheduler) admits PodGroups and binds the `volcano`
    # scheduler's pods; the node agent only runs pods.
    external_gang_scheduler: bool = False
    # Kueue's MultiKueue manager, dispatching to these local clusters (localcluster.multikueue).
    multikueue_workers: tuple[Worker, ...] = ()
    multikueue_worker_lost_timeout: str | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.dir / KUBECONFIG_FILE

    @property
    def logs(self) -> Path:
        return self.dir / LOG_DIR

    @property
    def kube_cache(self) -> Path:
        return self.dir / KUBE_CACHE_DIR
