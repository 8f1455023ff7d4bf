"""Rollout arithmetic: how many replicas each ReplicaSet of a Deployment gets, which old
ReplicaSets to prune, and the ReplicaSet a Deployment's template makes."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from localcluster.controllers.workloads.objects import (
    ANNOTATIONS_TO_SKIP,
    DEFAULT_HISTORY_LIMIT,
    DEFAULT_SURGE,
    DEFAULT_UNAVAILABLE,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    POD_TEMPLATE_HASH,
    REVISION,
    REVISION_HISTORY,
    as_int,
    controller_reference,
    created_order,
    meta_of,
    replicas,
    revision,
    spec_of,
    status_of,
)
from localcluster.controllers.workloads.templates import (
    replica_set_name,
)


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """An IntOrString: an int as is, `"25%"` of `total` rounded up or down."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        percent = as_int(text[:-1], 0)
        return -(-percent * total // 100) if round_up else percent * total // 100
    return as_int(text, 0)


def is_rolling(deployment: Mapping[str, Any]) -> bool:
    strategy = spec_of(deployment).get("strategy") or {}
    return bool(strategy.get("type", "RollingUpdate") != "Recreate")


def fenceposts(deployment: Mapping[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) resolved against spec.replicas (kube's ResolveFenceposts,
    MaxSurge and MaxUnavailable): both 0 for Recreate; never both 0 for a rolling update."""
    if not is_rolling(deployment):
        return 0, 0
    desired = replicas(deployment)
    rolling = (spec_of(deployment).get("strategy") or {}).get("rollingUpdate") or {}
    surge = scaled_value(rolling.get("maxSurge", DEFAULT_SURGE), desired, round_up=True)
    unavailable = scaled_value(
        rolling.get("maxUnavailable", DEFAULT_UNAVAILABLE), desired, round_up=False
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    if desired == 0:
        unavailable = 0
    return max(surge, 0), max(min(unavailable, desired), 0)


def new_replica_set_target(
    deployment: Mapping[str, Any],
    new_rs: Mapping[str, Any] | None,
    old_replica_sets: Sequence[Mapping[str, Any]],
) -> int:
    """How many replicas the new ReplicaSet should want now (kube's NewRSNewReplicas)."""
    desired = replicas(deployment)
    current = replicas(new_rs) if new_rs is not None else 0
    if not is_rolling(deployment) or current >= desired:
        return desired
    surge, _ = fenceposts(deployment)
    total = current + sum(replicas(rs) for rs in old_replica_sets)
    room = desired + surge - total
    if room <= 0:
        return current
    return current + min(room, desired - current)


def old_replica_set_targets(
    deployment: Mapping[str, Any],
    new_rs: Mapping[str, Any] | None,
    old_replica_sets: Sequence[Mapping[str, Any]],
) -> dict[str, int]:
    """New `spec.replicas` for the old ReplicaSets (by name) that should shrink now: unhealthy
    replicas first, then as many as availability above `replicas - maxUnavailable` allows,
    oldest ReplicaSet first (kube's reconcileOldReplicaSets)."""
    specs = {str(meta_of(rs).get("name")): replicas(rs) for rs in old_replica_sets}
    old_total = sum(specs.values())
    if old_total == 0:
        return {}
    if not is_rolling(deployment):
        return {name: 0 for name, count in specs.items() if count}
    _, max_unavailable = fenceposts(deployment)
    min_available = replicas(deployment) - max_unavailable
    new_spec = replicas(new_rs) if new_rs is not None else 0
    new_available = as_int(status_of(new_rs).get("availableReplicas")) if new_rs is not None else 0
    max_scaled_down = old_total + new_spec - min_available - (new_spec - new_available)
    if max_scaled_down <= 0:
        return {}
    targets: dict[str, int] = {}
    ordered = sorted(old_replica_sets, key=created_order)
    cleaned = 0
    for rs in ordered:
        name = str(meta_of(rs).get("name"))
        available = as_int(status_of(rs).get("availableReplicas"))
        if cleaned >= max_scaled_down:
            break
        if specs[name] == 0 or specs[name] <= available:
            continue
        count = min(max_scaled_down - cleaned, specs[name] - available)
        specs[name] -= count
        targets[name] = specs[name]
        cleaned += count
    available_total = new_available + sum(
        as_int(status_of(rs).get("availableReplicas")) for rs in old_replica_sets
    )
    budget = available_total - min_available
    for rs in ordered:
        if budget <= 0:
            break
        name = str(meta_of(rs).get("name"))
        if specs[name] == 0:
            continue
        count = min(specs[name], budget)
        specs[name] -= count
        targets[name] = specs[name]
        budget -= count
    return targets


def history_to_delete(
    deployment: Mapping[str, Any], old_replica_sets: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """Old ReplicaSets beyond `revisionHistoryLimit`, lowest revision first, that are fully
    scaled down and may go (kube's cleanupDeployment)."""
    limit = spec_of(deployment).get("revisionHistoryLimit")
    limit = DEFAULT_HISTORY_LIMIT if limit is None else max(as_int(limit), 0)
    alive = [rs for rs in old_replica_sets if not meta_of(rs).get("deletionTimestamp")]
    excess = len(alive) - limit
    if excess <= 0:
        return []
    doomed = []
    for rs in sorted(alive, key=lambda r: (revision(r), created_order(r)))[:excess]:
        status = status_of(rs)
        if (
            replicas(rs) == 0
            and as_int(status.get("replicas")) == 0
            and as_int(status.get("observedGeneration")) >= as_int(meta_of(rs).get("generation"))
        ):
            doomed.append(rs)
    return doomed


# -- ReplicaSets from a Deployment -----------------------------------------------------------


def replica_set_annotations(
    deployment: Mapping[str, Any],
    existing: Mapping[str, str],
    new_revision: int,
) -> dict[str, str]:
    """The annotations of the Deployment's current ReplicaSet: the Deployment's own (but
    kube's skip list), the revision (with the revisions it replaces in revision-history when a
    rollback reuses it), and the desired and max replica counts."""
    annotations = dict(existing)
    for key, value in (meta_of(deployment).get("annotations") or {}).items():
        if key not in ANNOTATIONS_TO_SKIP:
            annotations[str(key)] = str(value)
    old = existing.get(REVISION)
    if as_int(old, 0) < new_revision:
        annotations[REVISION] = str(new_revision)
        if old:
            history = [r for r in existing.get(REVISION_HISTORY, "").split(",") if r]
            annotations[REVISION_HISTORY] = ",".join([*history, old])
    surge, _ = fenceposts(deployment)
    annotations[DESIRED_REPLICAS] = str(replicas(deployment))
    annotations[MAX_REPLICAS] = str(replicas(deployment) + surge)
    return annotations


def new_replica_set(
    deployment: Mapping[str, Any], pod_template_hash: str, new_revision: int, count: int
) -> dict[str, Any]:
    """The ReplicaSet for the Deployment's current template."""
    meta = meta_of(deployment)
    spec = spec_of(deployment)
    template = copy.deepcopy(dict(spec.get("template") or {}))
    template_meta = template.setdefault("metadata", {})
    labels = {**(template_meta.get("labels") or {}), POD_TEMPLATE_HASH: pod_template_hash}
    template_meta["labels"] = labels
    selector = copy.deepcopy(dict(spec.get("selector") or {}))
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        POD_TEMPLATE_HASH: pod_template_hash,
    }
    rs_spec: dict[str, Any] = {"replicas": count, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": replica_set_name(str(meta.get("name")), pod_template_hash),
            "namespace": meta.get("namespace"),
            "labels": dict(labels),
            "annotations": replica_set_annotations(deployment, {}, new_revision),
            "ownerReferences": [controller_reference(deployment, "Deployment")],
        },
        "spec": rs_spec,
    }
