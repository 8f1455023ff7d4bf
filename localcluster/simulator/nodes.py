"""Simulated Nodes: what `vcjob local up` registers, and what the node agent's heartbeats write,
as kubelet writes them (pure).

A kubelet keeps its node alive two ways: it renews the node's Lease in `kube-node-lease` every
10 s (`renewLease`), and posts the node's status (conditions with a fresh `lastHeartbeatTime`,
addresses, kubelet endpoint, versions). kube-controller-manager's node lifecycle controller marks
the node `Unknown`, taints it and evicts its pods when both stop for longer than its grace period.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from localcluster import kubebin
from localcluster.simulator.kubelet import timestamp
from shared.wire import annotations_of, metadata, status_of

GPU_RESOURCE: Final = "nvidia.com/gpu"
MAX_PODS: Final = 110
KUBELET_VERSION: Final = kubebin.KUBERNETES_VERSION
DEFAULT_KUBELET_PORT: Final = 10250
# Where kube-apiserver reaches every node's kubelet API: one server on this machine's loopback.
NODE_ADDRESS: Final = "127.0.0.1"
# Marks the nodes this agent is the kubelet of: a Node created by someone else stays NotReady,
# and its pods are not run, as on a cluster where no kubelet serves it.
AGENT_ANNOTATION: Final = "sim.vcjob.io/node-agent"
LEASE_NAMESPACE: Final = "kube-node-lease"
LEASE_DURATION_SECONDS: Final = 40
RENEW_INTERVAL_SECONDS: Final = 10.0  # kubelet renews at a quarter of the lease's duration


@dataclass(frozen=True)
class NodeShape:
    cpu: str = "8"
    memory: str = "32Gi"
    gpu: int = 0


def node_name(index: int) -> str:
    return f"node-{index}"


def micro_time(moment: datetime) -> str:
    """metav1.MicroTime on the wire: `2006-01-02T15:04:05.000000Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ready_conditions(now: datetime) -> list[dict[str, Any]]:
    at = timestamp(now)

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": kind,
            "status": status,
            "lastHeartbeatTime": at,
            "lastTransitionTime": at,
            "reason": reason,
            "message": message,
        }

    return [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has "
                  "sufficient memory available"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no "
                  "disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has "
                  "sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]  # fmt: skip


def node_addresses(name: str, address: str = NODE_ADDRESS) -> list[dict[str, str]]:
    return [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}]


def daemon_endpoints(kubelet_port: int) -> dict[str, Any]:
    return {"kubeletEndpoint": {"Port": kubelet_port}}


def node_info(name: str) -> dict[str, str]:
    return {
        "architecture": "amd64",
        "operatingSystem": "linux",
        "osImage": "vcjob simulated node",
        "kernelVersion": "simulated",
        "kubeletVersion": KUBELET_VERSION,
        "kubeProxyVersion": KUBELET_VERSION,
        "containerRuntimeVersion": "containerd://simulated",
        "machineID": name,
        "systemUUID": name,
        "bootID": name,
    }


def build_node(
    index: int,
    shape: NodeShape,
    now: datetime,
    kubelet_port: int = DEFAULT_KUBELET_PORT,
    address: str = NODE_ADDRESS,
) -> dict[str, Any]:
    """Node `node-<index>` with the given capacity, Ready, its kubelet API at
    `address:kubelet_port`."""
    name = node_name(index)
    capacity: dict[str, str] = {
        "cpu": shape.cpu,
        "memory": shape.memory,
        "pods": str(MAX_PODS),
        "ephemeral-storage": "100Gi",
    }
    if shape.gpu > 0:
        capacity[GPU_RESOURCE] = str(shape.gpu)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "vcjob-simulated",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                AGENT_ANNOTATION: "true",
            },
        },
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": ready_conditions(now),
            "addresses": node_addresses(name, address),
            "daemonEndpoints": daemon_endpoints(kubelet_port),
            "nodeInfo": node_info(name),
        },
    }


def build_nodes(
    count: int,
    shape: NodeShape,
    now: datetime,
    kubelet_port: int = DEFAULT_KUBELET_PORT,
    address: str = NODE_ADDRESS,
) -> list[dict[str, Any]]:
    return [build_node(i, shape, now, kubelet_port, address) for i in range(1, count + 1)]


def managed(node: Mapping[str, Any]) -> bool:
    """Whether the node agent is this node's kubelet."""
    annotations = annotations_of(node)
    return annotations.get(AGENT_ANNOTATION) == "true"


def host_ip(node: Mapping[str, Any] | None) -> str:
    addresses: Sequence[Mapping[str, Any]] = status_of(node).get("addresses") or []
    for address in addresses:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return NODE_ADDRESS


def heartbeat_conditions(node: Mapping[str, Any], now: datetime) -> list[dict[str, Any]]:
    """The node's conditions with fresh heartbeats, keeping each transition time."""
    current = {c.get("type"): c for c in status_of(node).get("conditions") or []}
    fresh = ready_conditions(now)
    for condition in fresh:
        previous = current.get(condition["type"])
        if previous and previous.get("status") == condition["status"]:
            condition["lastTransitionTime"] = previous.get(
                "lastTransitionTime", condition["lastTransitionTime"]
            )
    return fresh


def status_update(
    node: Mapping[str, Any], now: datetime, kubelet_port: int, address: str = NODE_ADDRESS
) -> dict[str, Any]:
    """The merge patch of `nodes/status` a kubelet's status report amounts to: conditions with
    fresh heartbeats (a condition the node lifecycle controller turned Unknown transitions back
    now), addresses, the kubelet endpoint and versions."""
    name = str(metadata(node).get("name", ""))
    return {
        "status": {
            "conditions": heartbeat_conditions(node, now),
            "addresses": node_addresses(name, address),
            "daemonEndpoints": daemon_endpoints(kubelet_port),
            "nodeInfo": node_info(name),
        }
    }


def build_lease(node: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """The node's Lease as kubelet creates it: named after the node, owned by it (so it goes when
    the Node goes), held by it."""
    meta = metadata(node)
    name = str(meta.get("name", ""))
    lease: dict[str, Any] = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": micro_time(now),
        },
    }
    if meta.get("uid"):
        lease["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": str(meta["uid"])}
        ]
    return lease


def lease_renewal(node_name: str, now: datetime) -> dict[str, Any]:
    """The merge patch that renews a node's Lease."""
    return {
        "spec": {
            "holderIdentity": node_name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": micro_time(now),
        }
    }
