"""What a ReplicaSet does with its pods: which to create and delete, and its status."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from localcluster.controllers.workloads.objects import (
    as_int,
    controller_reference,
    meta_of,
    parse_time,
    rfc3339,
    spec_of,
    status_of,
)
from localcluster.controllers.workloads.status import (
    without_zeros,
)


def is_active(pod: Mapping[str, Any]) -> bool:
    """Counted by its ReplicaSet: not finished, not being deleted (kube's IsPodActive)."""
    phase = status_of(pod).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta_of(pod).get("deletionTimestamp")


def _ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in status_of(pod).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    condition = _ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def available_in(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> float | None:
    """Seconds until a pod counts as available: 0 when it does, None when it is not ready."""
    condition = _ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    if min_ready_seconds <= 0:
        return 0.0
    since = parse_time(condition.get("lastTransitionTime"))
    if since is None:
        return 0.0
    return max(min_ready_seconds - (now - since).total_seconds(), 0.0)


def replica_set_status(
    rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime
) -> tuple[dict[str, Any], float | None]:
    """The ReplicaSet's status from its active pods, and when it would next change by itself
    (a ready pod reaching `minReadySeconds`), in seconds, if ever."""
    template_labels = ((spec_of(rs).get("template") or {}).get("metadata") or {}).get(
        "labels"
    ) or {}
    min_ready = as_int(spec_of(rs).get("minReadySeconds"))
    fully_labeled = ready = available = 0
    recheck: float | None = None
    for pod in pods:
        labels = meta_of(pod).get("labels") or {}
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        wait = available_in(pod, min_ready, now)
        if wait is None:
            continue
        ready += 1
        if wait <= 0:
            available += 1
        else:
            recheck = wait if recheck is None else min(recheck, wait)
    status = without_zeros(
        {
            "replicas": len(pods),
            "fullyLabeledReplicas": fully_labeled,
            "readyReplicas": ready,
            "availableReplicas": available,
            "observedGeneration": as_int(meta_of(rs).get("generation")),
        },
        keep=("replicas",),
    )
    conditions = [c for c in status_of(rs).get("conditions") or [] if isinstance(c, Mapping)]
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    return status, recheck


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def pods_to_delete(pods: Sequence[Mapping[str, Any]], count: int) -> list[Mapping[str, Any]]:
    """The `count` pods to remove when scaling down, least useful first (kube's ActivePods
    order): unscheduled, then pending, then not ready, then most restarted, then newest."""

    def restarts(pod: Mapping[str, Any]) -> int:
        return sum(
            as_int(s.get("restartCount"))
            for s in status_of(pod).get("containerStatuses") or []
            if isinstance(s, Mapping)
        )

    def rank(pod: Mapping[str, Any]) -> tuple[int, int, int, int, str]:
        created = str(meta_of(pod).get("creationTimestamp") or "")
        # Newest first: negate the timestamp's characters so a plain ascending sort works.
        newest_first = "".join(chr(0x10FFFF - ord(c)) for c in created)
        return (
            1 if spec_of(pod).get("nodeName") else 0,
            _PHASE_RANK.get(str(status_of(pod).get("phase") or "Pending"), 0),
            1 if is_ready(pod) else 0,
            -restarts(pod),
            newest_first,
        )

    return sorted(pods, key=rank)[: max(count, 0)]


def new_pod(rs: Mapping[str, Any]) -> dict[str, Any]:
    """A pod from the ReplicaSet's template, named `<rs>-<random>`, controlled by it."""
    meta = meta_of(rs)
    template = spec_of(rs).get("template") or {}
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "generateName": f"{meta.get('name')}-",
        "namespace": meta.get("namespace"),
        "ownerReferences": [controller_reference(rs, "ReplicaSet")],
    }
    for field in ("labels", "annotations", "finalizers"):
        if template_meta.get(field):
            metadata[field] = copy.deepcopy(template_meta[field])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(dict(template.get("spec") or {})),
    }


def event(
    obj: Mapping[str, Any],
    kind: str,
    reason: str,
    message: str,
    component: str,
    now: datetime,
    api_version: str = "apps/v1",
) -> dict[str, Any]:
    """A Normal core/v1 Event about `obj` (`api_version` `kind`), as kube's recorder writes it."""
    meta = meta_of(obj)
    at = rfc3339(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name')}.{int(now.timestamp() * 1e9):x}",
            "namespace": meta.get("namespace"),
        },
        "involvedObject": {
            "apiVersion": api_version,
            "kind": kind,
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "type": "Normal",
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": component,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }


def status_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch turning status `old` into `new` (removed fields become null)."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    patch.update(new)
    return {"status": patch}
