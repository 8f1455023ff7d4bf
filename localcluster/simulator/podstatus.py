"""The status of a pod whose containers really run, from what the runtime knows of each one
(pure): phase, conditions and containerStatuses as kubelet reports them."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from localcluster.simulator.kubelet import image_repository, qos_class
from shared.wire import spec_of

BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0


@dataclass(frozen=True)
class ContainerView:
    name: str
    image: str
    state: dict[str, Any]  # {"waiting": …} | {"running": …} | {"terminated": …}
    last_state: dict[str, Any] = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    restart_count: int = 0
    container_id: str = ""

    def to_status(self) -> dict[str, Any]:
        digest = hashlib.sha256(self.image.encode()).hexdigest()
        status: dict[str, Any] = {
            "name": self.name,
            "state": self.state,
            "lastState": self.last_state,
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restart_count,
            "image": self.image,
            "imageID": f"{image_repository(self.image)}@sha256:{digest}",
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status


def restart_delay(restarts: int) -> float:
    """kubelet's CrashLoopBackOff: the first restart is at once, then 10 s doubling to 5 min."""
    if restarts <= 0:
        return 0.0
    return float(min(BACKOFF_INITIAL * 2.0 ** (restarts - 1), BACKOFF_MAX))


def should_restart(policy: str, exit_code: int) -> bool:
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def pod_phase(policy: str, views: Sequence[ContainerView], initialized: bool) -> str:
    if not initialized:
        return "Pending"
    states = [next(iter(v.state), "waiting") for v in views]
    if any(s == "running" for s in states):
        return "Running"
    if views and all(s == "terminated" for s in states):
        codes = [int(v.state["terminated"].get("exitCode", 0)) for v in views]
        if policy == "Always" or (policy == "OnFailure" and any(codes)):
            return "Running"
        return "Succeeded" if not any(codes) else "Failed"
    if any(v.restart_count or v.last_state for v in views):
        return "Running"
    return "Pending"


def _condition(kind: str, ok: bool, at: str, reason: str = "") -> dict[str, Any]:
    condition: dict[str, Any] = {
        "type": kind,
        "status": "True" if ok else "False",
        "lastTransitionTime": at,
    }
    if reason and not ok:
        condition["reason"] = reason
    return condition


def pod_status(
    pod: Mapping[str, Any],
    *,
    host_ip: str,
    pod_ip: str,
    start_time: str,
    init_views: Sequence[ContainerView],
    views: Sequence[ContainerView],
    initialized: bool,
    previous: Mapping[str, Any],
    at: str,
) -> dict[str, Any]:
    policy = str(spec_of(pod).get("restartPolicy") or "Always")
    phase = pod_phase(policy, views, initialized)
    ready = bool(views) and all(v.ready for v in views) and phase == "Running"
    finished = phase in ("Succeeded", "Failed")
    reason = "PodCompleted" if finished else "ContainersNotReady"
    wanted = [
        ("PodReadyToStartContainers", True, ""),
        ("Initialized", initialized, "ContainersNotInitialized"),
        ("Ready", ready, reason),
        ("ContainersReady", ready, reason),
        ("PodScheduled", True, ""),
    ]
    old = {c.get("type"): c for c in previous.get("conditions") or []}
    conditions = []
    for kind, ok, why in wanted:
        condition = _condition(kind, ok, at, why)
        before = old.get(kind)
        if before is not None and before.get("status") == condition["status"]:
            condition["lastTransitionTime"] = before.get("lastTransitionTime", at)
        conditions.append(condition)
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": start_time,
        "qosClass": qos_class(pod),
        "containerStatuses": [v.to_status() for v in views],
    }
    if init_views:
        status["initContainerStatuses"] = [v.to_status() for v in init_views]
    return status
