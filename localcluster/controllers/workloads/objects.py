"""Names, annotations and plain-dict helpers shared by the workload controllers."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from localcluster.controllers.client import Resource

DEPLOYMENTS = Resource(
    "apps", "v1", "deployments", "Deployment", True, frozenset({"list", "watch", "patch"})
)
REPLICASETS = Resource(
    "apps", "v1", "replicasets", "ReplicaSet", True, frozenset({"list", "watch", "create"})
)
PODS = Resource("", "v1", "pods", "Pod", True, frozenset({"list", "watch", "create", "delete"}))
EVENTS = Resource("", "v1", "events", "Event", True, frozenset({"create"}))

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
#: Deployment annotations that are not copied to its ReplicaSets (kube's annotationsToSkip).
ANNOTATIONS_TO_SKIP = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
DEFAULT_HISTORY_LIMIT = 10
DEFAULT_SURGE = "25%"
DEFAULT_UNAVAILABLE = "25%"

# Condition reasons, as kube's deployment controller words them.
AVAILABLE = "Available"
PROGRESSING = "Progressing"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"

RESYNC_SECONDS = 10.0
RETRY_SECONDS = 1.0
#: Bound on remembered deleted uids (see Cache).
TOMBSTONES = 10_000
#: apimachinery's rand.SafeEncodeString alphabet: no vowels, no 0/1/3 (no words, no look-alikes).
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


# -- plain-dict helpers ----------------------------------------------------------------------


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def as_int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


def object_key(obj: Mapping[str, Any]) -> str:
    meta = meta_of(obj)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def replicas(obj: Mapping[str, Any]) -> int:
    """`spec.replicas`, defaulting to 1 as the API does."""
    value = spec_of(obj).get("replicas")
    return 1 if value is None else as_int(value, 1)


def revision(obj: Mapping[str, Any]) -> int:
    """The `deployment.kubernetes.io/revision` annotation; 0 when absent or not a number."""
    annotations = meta_of(obj).get("annotations") or {}
    return as_int(annotations.get(REVISION), 0)


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in meta_of(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def controller_reference(owner: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A controller ownerReference to `owner`, an apps/v1 object of `kind` (list items need
    not carry their kind, so it is named)."""
    meta = meta_of(owner)
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def created_order(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = meta_of(obj)
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: Any) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
