"""Simulated Nodes: what `vcjob local up` registers, and the heartbeat that keeps them Ready."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from localcluster.simulator.kubelet import timestamp

GPU_RESOURCE = "nvidia.com/gpu"
MAX_PODS = 110
KUBELET_VERSION = "v1.31.0"


@dataclass(frozen=True)
class NodeShape:
    cpu: str = "8"
    memory: str = "32Gi"
    gpu: int = 0


def node_name(index: int) -> str:
    return f"node-{index}"


def node_address(index: int) -> str:
    return f"172.18.0.{index + 1}"


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


def build_node(index: int, shape: NodeShape, now: datetime) -> dict[str, Any]:
    """Node `node-<index>` with the given capacity, Ready."""
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
                "node.kubernetes.io/instance-type": "vcjob-simulated",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": ready_conditions(now),
            "addresses": [
                {"type": "InternalIP", "address": node_address(index)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
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
            },
        },
    }


def build_nodes(count: int, shape: NodeShape, now: datetime) -> list[dict[str, Any]]:
    return [build_node(i, shape, now) for i in range(1, count + 1)]


def host_ip(node: Mapping[str, Any] | None) -> str:
    addresses: Sequence[Mapping[str, Any]] = ((node or {}).get("status") or {}).get(
        "addresses"
    ) or []
    for address in addresses:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return "172.18.0.1"


def heartbeat_conditions(node: Mapping[str, Any], now: datetime) -> list[dict[str, Any]]:
    """The node's conditions with fresh heartbeats, keeping each transition time."""
    current = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
    fresh = ready_conditions(now)
    for condition in fresh:
        previous = current.get(condition["type"])
        if previous and previous.get("status") == condition["status"]:
            condition["lastTransitionTime"] = previous.get(
                "lastTransitionTime", condition["lastTransitionTime"]
            )
    return fresh
