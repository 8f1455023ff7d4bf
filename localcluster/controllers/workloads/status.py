"""A Deployment's status and conditions, from its ReplicaSets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from localcluster.controllers.workloads.objects import (
    AVAILABLE,
    FOUND_NEW_RS,
    MIN_AVAILABLE,
    MIN_UNAVAILABLE,
    NEW_RS_AVAILABLE,
    NEW_RS_CREATED,
    PAUSED,
    PROGRESSING,
    RESUMED,
    RS_UPDATED,
    as_int,
    meta_of,
    replicas,
    rfc3339,
    spec_of,
    status_of,
)
from localcluster.controllers.workloads.rollout import (
    fenceposts,
)


def without_zeros(status: dict[str, Any], keep: Iterable[str] = ()) -> dict[str, Any]:
    """Drop zero counters, as kube's `omitempty` does."""
    kept = set(keep)
    return {k: v for k, v in status.items() if k in kept or (v != 0 and v is not None)}


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    *,
    refresh: bool = False,
) -> list[dict[str, Any]]:
    """kube's SetDeploymentCondition: unchanged when status and reason are (unless `refresh`,
    which the Progressing condition uses to record progress); the transition time is kept while
    the status is; the condition moves to the end."""
    current = next((c for c in conditions if c.get("type") == kind), None)
    if (
        not refresh
        and current is not None
        and current.get("status") == status
        and current.get("reason") == reason
    ):
        return conditions
    transition = now
    if current is not None and current.get("status") == status:
        transition = str(current.get("lastTransitionTime") or now)
    condition = {
        "type": kind,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }
    return [c for c in conditions if c.get("type") != kind] + [condition]


def deployment_counts(
    deployment: Mapping[str, Any],
    new_rs: Mapping[str, Any] | None,
    replica_sets: Sequence[Mapping[str, Any]],
) -> dict[str, int]:
    """The counters of a Deployment's status, from its ReplicaSets' (kube's calculateStatus)."""
    available = sum(as_int(status_of(rs).get("availableReplicas")) for rs in replica_sets)
    wanted = sum(replicas(rs) for rs in replica_sets)
    return {
        "observedGeneration": as_int(meta_of(deployment).get("generation")),
        "replicas": sum(as_int(status_of(rs).get("replicas")) for rs in replica_sets),
        "updatedReplicas": as_int(status_of(new_rs).get("replicas")) if new_rs is not None else 0,
        "readyReplicas": sum(as_int(status_of(rs).get("readyReplicas")) for rs in replica_sets),
        "availableReplicas": available,
        "unavailableReplicas": max(wanted - available, 0),
    }


def deployment_complete(deployment: Mapping[str, Any], counts: Mapping[str, int]) -> bool:
    desired = replicas(deployment)
    return (
        counts["updatedReplicas"] == desired
        and counts["replicas"] == desired
        and counts["availableReplicas"] == desired
        and counts["observedGeneration"] >= as_int(meta_of(deployment).get("generation"))
    )


def _progressed(old: Mapping[str, Any], new: Mapping[str, int]) -> bool:
    old_updated = as_int(old.get("updatedReplicas"))
    old_others = as_int(old.get("replicas")) - old_updated
    new_others = new["replicas"] - new["updatedReplicas"]
    return (
        new["updatedReplicas"] > old_updated
        or new_others < old_others
        or new["readyReplicas"] > as_int(old.get("readyReplicas"))
        or new["availableReplicas"] > as_int(old.get("availableReplicas"))
    )


def deployment_status(
    deployment: Mapping[str, Any],
    new_rs: Mapping[str, Any] | None,
    replica_sets: Sequence[Mapping[str, Any]],
    now: datetime,
    *,
    created_new: bool = False,
) -> dict[str, Any]:
    """The Deployment's status given its ReplicaSets (`new_rs` among them, when it exists):
    counters, the `Available` condition and the `Progressing` one, as kube's deployment
    controller computes them (without the progress deadline)."""
    at = rfc3339(now)
    old_status = status_of(deployment)
    counts = deployment_counts(deployment, new_rs, replica_sets)
    conditions: list[dict[str, Any]] = [
        dict(c) for c in old_status.get("conditions") or [] if isinstance(c, Mapping)
    ]
    _, max_unavailable = fenceposts(deployment)
    if counts["availableReplicas"] >= replicas(deployment) - max_unavailable:
        conditions = set_condition(
            conditions, AVAILABLE, "True", MIN_AVAILABLE, "Deployment has minimum availability.", at
        )
    else:
        conditions = set_condition(
            conditions,
            AVAILABLE,
            "False",
            MIN_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            at,
        )

    def progressing() -> dict[str, Any] | None:
        return next((c for c in conditions if c.get("type") == PROGRESSING), None)

    name = str(meta_of(new_rs).get("name")) if new_rs is not None else ""
    if spec_of(deployment).get("paused"):
        conditions = set_condition(
            conditions, PROGRESSING, "Unknown", PAUSED, "Deployment is paused", at
        )
    else:
        current = progressing()
        if current is not None and current.get("reason") == PAUSED:
            conditions = set_condition(
                conditions, PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", at
            )
        if created_new and new_rs is not None:
            conditions = set_condition(
                conditions,
                PROGRESSING,
                "True",
                NEW_RS_CREATED,
                f'Created new replica set "{name}"',
                at,
            )
        elif new_rs is not None and progressing() is None:
            conditions = set_condition(
                conditions, PROGRESSING, "True", FOUND_NEW_RS, f'Found new replica set "{name}"', at
            )
        current = progressing()
        settled = (
            counts["replicas"] == counts["updatedReplicas"]
            and current is not None
            and current.get("reason") == NEW_RS_AVAILABLE
        )
        subject = (
            f'ReplicaSet "{name}"'
            if new_rs is not None
            else (f'Deployment "{meta_of(deployment).get("name")}"')
        )
        if not settled:
            if deployment_complete(deployment, counts):
                conditions = set_condition(
                    conditions,
                    PROGRESSING,
                    "True",
                    NEW_RS_AVAILABLE,
                    f"{subject} has successfully progressed.",
                    at,
                )
            elif _progressed(old_status, counts):
                conditions = set_condition(
                    conditions,
                    PROGRESSING,
                    "True",
                    RS_UPDATED,
                    f"{subject} is progressing.",
                    at,
                    refresh=True,
                )
    status = without_zeros(dict(counts))
    if old_status.get("collisionCount") is not None:
        status["collisionCount"] = old_status["collisionCount"]
    if conditions:
        status["conditions"] = conditions
    return status
