"""`vcjob local up --kueue --multikueue-worker NAME=DIR`: this cluster as Kueue's MultiKueue
manager, dispatching vcjob Jobs to the local clusters already running from each DIR.

On the manager: Kueue's configuration lists vcjob's Job among `multiKueue.externalFrameworks`;
each worker's kubeconfig (its admin token and CA, inline) goes into a Secret of kueue-system, named
by a MultiKueueCluster; a MultiKueueConfig lists them, an AdmissionCheck of MultiKueue's
controller names it, and the ClusterQueue `multikueue` carries that check. On every cluster, the
ResourceFlavor, ClusterQueue and LocalQueue (namespace `default`) are called `multikueue`: the
manager's quota only lets Jobs through to MultiKueue, a worker's is its nodes' allocatable cpu and
memory (existing queues of that name are left as they are; the rest is written afresh at every
start). docs/multikueue.md does the same on real clusters. Pure builders; `localcluster.up` writes
them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from localcluster import kueue
from localcluster.clusterdir import KUBECONFIG_FILE
from localcluster.simulator.client import Resource
from shared import labels, quantity
from shared.wire import status_of

API_VERSION: Final = "kueue.x-k8s.io/v1beta2"
ADMISSION_CHECK: Final = "vcjob-multikueue"
CONFIG: Final = "vcjob-multikueue"
QUEUE: Final = "multikueue"
QUEUE_NAMESPACE: Final = "default"
# What the manager's ClusterQueue admits: enough to pass every Job to MultiKueue, whose workers'
# own quotas decide where (and whether) it runs.
MANAGER_QUOTA: Final = {"cpu": "100k", "memory": "1Pi"}
COVERED: Final = ("cpu", "memory")

RESOURCE_FLAVORS: Final = Resource("kueue.x-k8s.io", "v1beta2", "resourceflavors", False)
CLUSTER_QUEUES: Final = Resource("kueue.x-k8s.io", "v1beta2", "clusterqueues", False)
LOCAL_QUEUES: Final = Resource("kueue.x-k8s.io", "v1beta2", "localqueues", True)
ADMISSION_CHECKS: Final = Resource("kueue.x-k8s.io", "v1beta2", "admissionchecks", False)
MULTIKUEUE_CLUSTERS: Final = Resource("kueue.x-k8s.io", "v1beta2", "multikueueclusters", False)
MULTIKUEUE_CONFIGS: Final = Resource("kueue.x-k8s.io", "v1beta2", "multikueueconfigs", False)
# The queues: created where missing, never overwritten (their quotas are the user's to change).
QUEUE_RESOURCES: Final = (RESOURCE_FLAVORS, CLUSTER_QUEUES, LOCAL_QUEUES)

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class Worker:
    """A worker cluster: the MultiKueueCluster's name and the folder of its `vcjob local up`."""

    name: str
    dir: Path

    @property
    def kubeconfig(self) -> Path:
        return self.dir / KUBECONFIG_FILE

    @property
    def secret(self) -> str:
        return f"multikueue-{self.name}"


def parse_worker(text: str) -> Worker:
    """`NAME=DIR`; a ValueError says what is wrong with it."""
    name, sep, folder = text.partition("=")
    if not sep or not folder:
        raise ValueError(f"{text!r}: expected NAME=DIR (the worker's `vcjob local up --dir`)")
    if not _NAME.match(name) or len(name) > 63 - len("multikueue-"):
        raise ValueError(
            f"{text!r}: NAME must be a DNS label of at most {63 - len('multikueue-')} characters "
            "(lower-case letters, digits and '-')"
        )
    return Worker(name, Path(folder))


def check_workers(workers: Sequence[Worker]) -> None:
    names = [w.name for w in workers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"MultiKueue worker names must differ: {', '.join(duplicates)}")


def configuration_section(worker_lost_timeout: str | None) -> dict[str, Any]:
    """Kueue's `multiKueue` configuration on the manager."""
    section: dict[str, Any] = {"externalFrameworks": [{"name": kueue.EXTERNAL_FRAMEWORK}]}
    if worker_lost_timeout:
        section["workerLostTimeout"] = worker_lost_timeout
    return section


def kubeconfig_secret(worker: Worker, kubeconfig: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": worker.secret, "namespace": kueue.NAMESPACE},
        "stringData": {"kubeconfig": kubeconfig},
    }


def manager_objects(workers: Sequence[Worker]) -> list[tuple[Resource, dict[str, Any]]]:
    """What the manager needs beside the Secrets, in the order it is created."""
    out: list[tuple[Resource, dict[str, Any]]] = [
        (
            MULTIKUEUE_CLUSTERS,
            {
                "apiVersion": API_VERSION,
                "kind": "MultiKueueCluster",
                "metadata": {"name": w.name},
                "spec": {
                    "clusterSource": {
                        "kubeConfig": {"locationType": "Secret", "location": w.secret}
                    }
                },
            },
        )
        for w in workers
    ]
    out.append(
        (
            MULTIKUEUE_CONFIGS,
            {
                "apiVersion": API_VERSION,
                "kind": "MultiKueueConfig",
                "metadata": {"name": CONFIG},
                "spec": {"clusters": [w.name for w in workers]},
            },
        )
    )
    out.append(
        (
            ADMISSION_CHECKS,
            {
                "apiVersion": API_VERSION,
                "kind": "AdmissionCheck",
                "metadata": {"name": ADMISSION_CHECK},
                "spec": {
                    "controllerName": labels.MANAGED_BY_MULTIKUEUE,
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "MultiKueueConfig",
                        "name": CONFIG,
                    },
                },
            },
        )
    )
    out += queue_objects(MANAGER_QUOTA, admission_checks=[ADMISSION_CHECK])
    return out


def queue_objects(
    quota: Mapping[str, str], admission_checks: Sequence[str] = ()
) -> list[tuple[Resource, dict[str, Any]]]:
    """The ResourceFlavor, ClusterQueue and LocalQueue `multikueue` with this quota."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": list(COVERED),
                "flavors": [
                    {
                        "name": QUEUE,
                        "resources": [
                            {"name": name, "nominalQuota": quota[name]} for name in COVERED
                        ],
                    }
                ],
            }
        ],
    }
    if admission_checks:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": name} for name in admission_checks]
        }
    return [
        (
            RESOURCE_FLAVORS,
            {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": QUEUE}},
        ),
        (
            CLUSTER_QUEUES,
            {
                "apiVersion": API_VERSION,
                "kind": "ClusterQueue",
                "metadata": {"name": QUEUE},
                "spec": spec,
            },
        ),
        (
            LOCAL_QUEUES,
            {
                "apiVersion": API_VERSION,
                "kind": "LocalQueue",
                "metadata": {"name": QUEUE, "namespace": QUEUE_NAMESPACE},
                "spec": {"clusterQueue": QUEUE},
            },
        ),
    ]


def nodes_quota(nodes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The allocatable cpu and memory of these nodes, summed: a worker's ClusterQueue quota."""
    total: dict[str, Decimal] = {}
    for node in nodes:
        allocatable = quantity.parse_resource_list(status_of(node).get("allocatable"))
        total = quantity.add_quantities(total, allocatable)
    return {name: quantity.render(total.get(name, Decimal(0))) for name in COVERED}
