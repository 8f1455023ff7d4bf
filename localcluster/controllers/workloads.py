"""The Deployment and ReplicaSet controllers, as kube-controller-manager runs them (simplified).

A Deployment owns one ReplicaSet per distinct pod template, named `<deployment>-<hash>` where the
hash is a short stable digest of the template; the ReplicaSet's selector and template carry it as
the `pod-template-hash` label, and its `deployment.kubernetes.io/revision` annotation numbers the
rollouts. A template change gets a new ReplicaSet that is scaled up while the old ones are scaled
down — a rolling update within `maxSurge`/`maxUnavailable`, or `Recreate` — and the Deployment's
status and conditions follow the ReplicaSets'. Old ReplicaSets scaled to zero are kept up to
`revisionHistoryLimit`, so `kubectl rollout history` and `kubectl rollout undo` work.

A ReplicaSet creates and deletes the pods it controls (by ownerReference) until as many as
`spec.replicas` are active, and counts them, ready and available, in its status.

Simplifications: no adoption or release of objects by selector (only ownerReferences count), no
proportional scaling of several active ReplicaSets, no progress deadline (`Progressing` never
turns False), no pod creation in slow-start batches. Deleting a Deployment or ReplicaSet is left to
the garbage collector.

The decisions are pure functions of plain dicts (the top half of this module); the two thread
classes at the bottom list and watch, keep caches and carry them out.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx

from localcluster.controllers.client import ApiClient, ApiError, ClusterAccess, Resource
from localcluster.controllers.gc import WorkQueue
from localcluster.controllers.informer import ResourceWatch

logger = logging.getLogger(__name__)

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


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


def object_key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def replicas(obj: Mapping[str, Any]) -> int:
    """`spec.replicas`, defaulting to 1 as the API does."""
    value = _spec(obj).get("replicas")
    return 1 if value is None else _int(value, 1)


def revision(obj: Mapping[str, Any]) -> int:
    """The `deployment.kubernetes.io/revision` annotation; 0 when absent or not a number."""
    annotations = _meta(obj).get("annotations") or {}
    return _int(annotations.get(REVISION), 0)


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in _meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def controller_reference(owner: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A controller ownerReference to `owner`, an apps/v1 object of `kind` (list items need
    not carry their kind, so it is named)."""
    meta = _meta(owner)
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _created(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = _meta(obj)
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: Any) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


# -- pod templates ---------------------------------------------------------------------------


def normalized(value: Any) -> Any:
    """`value` without null, empty, false or "" fields, recursively: two templates that kube
    would call semantically equal (absent and zero-valued fields alike, as after a trip through
    kubectl's typed structs) normalize to the same thing."""
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            item = normalized(item)
            if item is None or item is False or item == "" or item == {} or item == []:
                continue
            result[str(key)] = item
        return result
    if isinstance(value, list | tuple):
        return [normalized(item) for item in value]
    return value


def _without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(dict(template))
    labels = (stripped.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH, None)
    normal: dict[str, Any] = normalized(stripped)
    return normal


def templates_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """kube's EqualIgnoreHash: the same pod template, `pod-template-hash` label aside."""
    return _without_hash(a) == _without_hash(b)


def _fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """apimachinery's rand.SafeEncodeString: each character mapped into SAFE_ALPHABET."""
    return "".join(SAFE_ALPHABET[ord(char) % len(SAFE_ALPHABET)] for char in text)


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """A short stable name for a pod template (up to 10 characters of [a-z0-9], like kube's):
    FNV-32a of its canonical JSON, `pod-template-hash` label and empty fields aside."""
    canonical = json.dumps(_without_hash(template), sort_keys=True, separators=(",", ":"))
    if collision_count:
        canonical += f"#{collision_count}"
    return safe_encode(str(_fnv32a(canonical.encode())))


def replica_set_name(deployment_name: str, pod_template_hash: str) -> str:
    return f"{deployment_name}-{pod_template_hash}"


ReplicaSet = TypeVar("ReplicaSet", bound=Mapping[str, Any])


def find_new_replica_set(
    deployment: Mapping[str, Any], replica_sets: Iterable[ReplicaSet]
) -> ReplicaSet | None:
    """The oldest ReplicaSet whose template is the Deployment's (kube's FindNewReplicaSet)."""
    template = _spec(deployment).get("template") or {}
    for rs in sorted(replica_sets, key=_created):
        if templates_equal(_spec(rs).get("template") or {}, template):
            return rs
    return None


# -- rollout arithmetic ----------------------------------------------------------------------


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """An IntOrString: an int as is, `"25%"` of `total` rounded up or down."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        percent = _int(text[:-1], 0)
        return -(-percent * total // 100) if round_up else percent * total // 100
    return _int(text, 0)


def is_rolling(deployment: Mapping[str, Any]) -> bool:
    strategy = _spec(deployment).get("strategy") or {}
    return bool(strategy.get("type", "RollingUpdate") != "Recreate")


def fenceposts(deployment: Mapping[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) resolved against spec.replicas (kube's ResolveFenceposts,
    MaxSurge and MaxUnavailable): both 0 for Recreate; never both 0 for a rolling update."""
    if not is_rolling(deployment):
        return 0, 0
    desired = replicas(deployment)
    rolling = (_spec(deployment).get("strategy") or {}).get("rollingUpdate") or {}
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
    specs = {str(_meta(rs).get("name")): replicas(rs) for rs in old_replica_sets}
    old_total = sum(specs.values())
    if old_total == 0:
        return {}
    if not is_rolling(deployment):
        return {name: 0 for name, count in specs.items() if count}
    _, max_unavailable = fenceposts(deployment)
    min_available = replicas(deployment) - max_unavailable
    new_spec = replicas(new_rs) if new_rs is not None else 0
    new_available = _int(_status(new_rs).get("availableReplicas")) if new_rs is not None else 0
    max_scaled_down = old_total + new_spec - min_available - (new_spec - new_available)
    if max_scaled_down <= 0:
        return {}
    targets: dict[str, int] = {}
    ordered = sorted(old_replica_sets, key=_created)
    cleaned = 0
    for rs in ordered:
        name = str(_meta(rs).get("name"))
        available = _int(_status(rs).get("availableReplicas"))
        if cleaned >= max_scaled_down:
            break
        if specs[name] == 0 or specs[name] <= available:
            continue
        count = min(max_scaled_down - cleaned, specs[name] - available)
        specs[name] -= count
        targets[name] = specs[name]
        cleaned += count
    available_total = new_available + sum(
        _int(_status(rs).get("availableReplicas")) for rs in old_replica_sets
    )
    budget = available_total - min_available
    for rs in ordered:
        if budget <= 0:
            break
        name = str(_meta(rs).get("name"))
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
    limit = _spec(deployment).get("revisionHistoryLimit")
    limit = DEFAULT_HISTORY_LIMIT if limit is None else max(_int(limit), 0)
    alive = [rs for rs in old_replica_sets if not _meta(rs).get("deletionTimestamp")]
    excess = len(alive) - limit
    if excess <= 0:
        return []
    doomed = []
    for rs in sorted(alive, key=lambda r: (revision(r), _created(r)))[:excess]:
        status = _status(rs)
        if (
            replicas(rs) == 0
            and _int(status.get("replicas")) == 0
            and _int(status.get("observedGeneration")) >= _int(_meta(rs).get("generation"))
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
    for key, value in (_meta(deployment).get("annotations") or {}).items():
        if key not in ANNOTATIONS_TO_SKIP:
            annotations[str(key)] = str(value)
    old = existing.get(REVISION)
    if _int(old, 0) < new_revision:
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
    meta = _meta(deployment)
    spec = _spec(deployment)
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


# -- Deployment status -----------------------------------------------------------------------


def _without_zeros(status: dict[str, Any], keep: Iterable[str] = ()) -> dict[str, Any]:
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
    available = sum(_int(_status(rs).get("availableReplicas")) for rs in replica_sets)
    wanted = sum(replicas(rs) for rs in replica_sets)
    return {
        "observedGeneration": _int(_meta(deployment).get("generation")),
        "replicas": sum(_int(_status(rs).get("replicas")) for rs in replica_sets),
        "updatedReplicas": _int(_status(new_rs).get("replicas")) if new_rs is not None else 0,
        "readyReplicas": sum(_int(_status(rs).get("readyReplicas")) for rs in replica_sets),
        "availableReplicas": available,
        "unavailableReplicas": max(wanted - available, 0),
    }


def deployment_complete(deployment: Mapping[str, Any], counts: Mapping[str, int]) -> bool:
    desired = replicas(deployment)
    return (
        counts["updatedReplicas"] == desired
        and counts["replicas"] == desired
        and counts["availableReplicas"] == desired
        and counts["observedGeneration"] >= _int(_meta(deployment).get("generation"))
    )


def _progressed(old: Mapping[str, Any], new: Mapping[str, int]) -> bool:
    old_updated = _int(old.get("updatedReplicas"))
    old_others = _int(old.get("replicas")) - old_updated
    new_others = new["replicas"] - new["updatedReplicas"]
    return (
        new["updatedReplicas"] > old_updated
        or new_others < old_others
        or new["readyReplicas"] > _int(old.get("readyReplicas"))
        or new["availableReplicas"] > _int(old.get("availableReplicas"))
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
    old_status = _status(deployment)
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

    name = str(_meta(new_rs).get("name")) if new_rs is not None else ""
    if _spec(deployment).get("paused"):
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
            else (f'Deployment "{_meta(deployment).get("name")}"')
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
    status = _without_zeros(dict(counts))
    if old_status.get("collisionCount") is not None:
        status["collisionCount"] = old_status["collisionCount"]
    if conditions:
        status["conditions"] = conditions
    return status


# -- ReplicaSet → pods -----------------------------------------------------------------------


def is_active(pod: Mapping[str, Any]) -> bool:
    """Counted by its ReplicaSet: not finished, not being deleted (kube's IsPodActive)."""
    phase = _status(pod).get("phase")
    return phase not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


def _ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in _status(pod).get("conditions") or []:
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
    since = _parse_time(condition.get("lastTransitionTime"))
    if since is None:
        return 0.0
    return max(min_ready_seconds - (now - since).total_seconds(), 0.0)


def replica_set_status(
    rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime
) -> tuple[dict[str, Any], float | None]:
    """The ReplicaSet's status from its active pods, and when it would next change by itself
    (a ready pod reaching `minReadySeconds`), in seconds, if ever."""
    template_labels = ((_spec(rs).get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = _int(_spec(rs).get("minReadySeconds"))
    fully_labeled = ready = available = 0
    recheck: float | None = None
    for pod in pods:
        labels = _meta(pod).get("labels") or {}
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
    status = _without_zeros(
        {
            "replicas": len(pods),
            "fullyLabeledReplicas": fully_labeled,
            "readyReplicas": ready,
            "availableReplicas": available,
            "observedGeneration": _int(_meta(rs).get("generation")),
        },
        keep=("replicas",),
    )
    conditions = [c for c in _status(rs).get("conditions") or [] if isinstance(c, Mapping)]
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    return status, recheck


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def pods_to_delete(pods: Sequence[Mapping[str, Any]], count: int) -> list[Mapping[str, Any]]:
    """The `count` pods to remove when scaling down, least useful first (kube's ActivePods
    order): unscheduled, then pending, then not ready, then most restarted, then newest."""

    def restarts(pod: Mapping[str, Any]) -> int:
        return sum(
            _int(s.get("restartCount"))
            for s in _status(pod).get("containerStatuses") or []
            if isinstance(s, Mapping)
        )

    def rank(pod: Mapping[str, Any]) -> tuple[int, int, int, int, str]:
        created = str(_meta(pod).get("creationTimestamp") or "")
        # Newest first: negate the timestamp's characters so a plain ascending sort works.
        newest_first = "".join(chr(0x10FFFF - ord(c)) for c in created)
        return (
            1 if _spec(pod).get("nodeName") else 0,
            _PHASE_RANK.get(str(_status(pod).get("phase") or "Pending"), 0),
            1 if is_ready(pod) else 0,
            -restarts(pod),
            newest_first,
        )

    return sorted(pods, key=rank)[: max(count, 0)]


def new_pod(rs: Mapping[str, Any]) -> dict[str, Any]:
    """A pod from the ReplicaSet's template, named `<rs>-<random>`, controlled by it."""
    meta = _meta(rs)
    template = _spec(rs).get("template") or {}
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
    obj: Mapping[str, Any], kind: str, reason: str, message: str, component: str, now: datetime
) -> dict[str, Any]:
    """A Normal core/v1 Event about `obj`, an apps/v1 `kind`, as kube's recorder writes one."""
    meta = _meta(obj)
    at = rfc3339(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name')}.{int(now.timestamp() * 1e9):x}",
            "namespace": meta.get("namespace"),
        },
        "involvedObject": {
            "apiVersion": "apps/v1",
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


# -- I/O: caches and controller threads ------------------------------------------------------


def _uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or object_key(obj))


def _resource_version(obj: Mapping[str, Any]) -> int | None:
    try:
        return int(str(_meta(obj).get("resourceVersion")))
    except ValueError:
        return None


class Cache:
    """The objects of one resource, fed by its watch and by the answers to our own writes.

    Writes answer before their watch events arrive, so both feed the cache: an older version
    never replaces a newer one, and an object once deleted (or deleted by us) never comes back.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {}
        self._keys: dict[str, str] = {}
        self._owned: dict[str, set[str]] = {}
        self._gone: OrderedDict[str, None] = OrderedDict()
        self.synced = threading.Event()

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        with self._lock:
            self._objects.clear()
            self._keys.clear()
            self._owned.clear()
            for obj in items:
                if _uid(obj) not in self._gone:
                    self._put(obj)
        self.synced.set()

    def observe(self, obj: dict[str, Any]) -> None:
        """Remember `obj` unless what is known is newer or it was deleted."""
        uid = _uid(obj)
        with self._lock:
            if uid in self._gone:
                return
            old = self._objects.get(uid)
            if old is not None:
                old_version, new_version = _resource_version(old), _resource_version(obj)
                if (
                    old_version is not None
                    and new_version is not None
                    and new_version < old_version
                ):
                    return
                self._drop(uid)
            self._put(obj)

    def forget(self, obj: Mapping[str, Any]) -> None:
        """`obj` was deleted: drop it and ignore whatever about it arrives later."""
        uid = _uid(obj)
        with self._lock:
            self._drop(uid)
            self._gone[uid] = None
            while len(self._gone) > TOMBSTONES:
                self._gone.popitem(last=False)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            uid = self._keys.get(key)
            return self._objects.get(uid) if uid is not None else None

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._keys)

    def controlled_by(self, owner_uid: str) -> list[dict[str, Any]]:
        with self._lock:
            return [self._objects[u] for u in self._owned.get(owner_uid, ()) if u in self._objects]

    def _put(self, obj: dict[str, Any]) -> None:
        uid = _uid(obj)
        self._objects[uid] = obj
        self._keys[object_key(obj)] = uid
        owner = controller_of(obj)
        if owner is not None:
            self._owned.setdefault(str(owner.get("uid", "")), set()).add(uid)

    def _drop(self, uid: str) -> None:
        old = self._objects.pop(uid, None)
        if old is None:
            return
        key = object_key(old)
        if self._keys.get(key) == uid:
            del self._keys[key]
        owner = controller_of(old)
        if owner is not None:
            self._owned.get(str(owner.get("uid", "")), set()).discard(uid)


@dataclass(frozen=True)
class _Watched:
    resource: Resource
    cache: Cache
    #: For a dependent resource: the owner kind whose key a change of it enqueues.
    owner_kind: str = ""


class _WorkloadController(threading.Thread):
    """Watches a primary resource and its dependents; syncs one primary object at a time."""

    component = ""
    kind = ""

    def __init__(
        self, access: ClusterAccess, stop: threading.Event, watched: Sequence[_Watched]
    ) -> None:
        super().__init__(name=self.component, daemon=True)
        self.access = access
        self.stop = stop
        self.queue = WorkQueue()
        self._watched = {(w.resource.group, w.resource.plural): w for w in watched}
        self._primary = watched[0].cache

    def run(self) -> None:
        for watched in self._watched.values():
            ResourceWatch(
                self.access, watched.resource, self._on_sync, self._on_event, self.stop
            ).start()
        with ApiClient(self.access) as client:
            next_resync = 0.0
            while not self.stop.is_set():
                if not all(w.cache.synced.is_set() for w in self._watched.values()):
                    self.stop.wait(0.1)
                    continue
                if time.monotonic() >= next_resync:
                    self.queue.add(self._primary.keys())
                    next_resync = time.monotonic() + RESYNC_SECONDS
                key = self.queue.take(timeout=0.2)
                if key is None:
                    continue
                try:
                    self.sync(client, key)
                except (ApiError, httpx.HTTPError) as exc:
                    logger.info(
                        "workload sync retried",
                        extra={"controller": self.component, "key": key, "error": str(exc)},
                    )
                    self.queue.retry(key)
                except Exception:
                    logger.exception(
                        "workload sync failed", extra={"controller": self.component, "key": key}
                    )
                    self.queue.retry(key, RESYNC_SECONDS)

    def sync(self, client: ApiClient, key: str) -> None:
        raise NotImplementedError

    # events (called on watch threads) ------------------------------------------------------

    def _on_sync(self, resource: Resource, items: list[dict[str, Any]]) -> None:
        watched = self._watched[(resource.group, resource.plural)]
        watched.cache.replace(items)
        self.queue.add(self._keys_for(watched, items))

    def _on_event(self, resource: Resource, kind: str, obj: dict[str, Any]) -> None:
        watched = self._watched[(resource.group, resource.plural)]
        if kind == "DELETED":
            watched.cache.forget(obj)
        else:
            watched.cache.observe(obj)
        self.queue.add(self._keys_for(watched, [obj]))

    @staticmethod
    def _keys_for(watched: _Watched, objects: Iterable[Mapping[str, Any]]) -> list[str]:
        if not watched.owner_kind:
            return [object_key(obj) for obj in objects]
        keys = []
        for obj in objects:
            owner = controller_of(obj)
            if owner is not None and owner.get("kind") == watched.owner_kind:
                keys.append(f"{_meta(obj).get('namespace') or ''}/{owner.get('name')}")
        return keys

    # writes --------------------------------------------------------------------------------

    def record(self, client: ApiClient, obj: Mapping[str, Any], reason: str, message: str) -> None:
        """Best effort, one attempt: an event is not worth holding up the work."""
        body = event(obj, self.kind, reason, message, self.component, datetime.now(UTC))
        try:
            client.request("POST", EVENTS.path(str(_meta(obj).get("namespace"))), body=body)
        except (ApiError, httpx.HTTPError) as exc:
            logger.debug("event not recorded", extra={"reason": reason, "error": str(exc)})

    @staticmethod
    def merge_patch(client: ApiClient, path: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        return client.request(
            "PATCH", path, body=patch, content_type="application/merge-patch+json"
        )


class ReplicaSetController(_WorkloadController):
    """Keeps `spec.replicas` active pods per ReplicaSet and reports them in its status."""

    component = "replicaset-controller"
    kind = "ReplicaSet"

    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        self.replicasets = Cache()
        self.pods = Cache()
        super().__init__(
            access,
            stop,
            [_Watched(REPLICASETS, self.replicasets), _Watched(PODS, self.pods, "ReplicaSet")],
        )

    def sync(self, client: ApiClient, key: str) -> None:
        rs = self.replicasets.get(key)
        if rs is None:
            return
        if not _meta(rs).get("deletionTimestamp"):
            self._manage(client, rs)
        active = [p for p in self.pods.controlled_by(_uid(rs)) if is_active(p)]
        status, recheck = replica_set_status(rs, active, datetime.now(UTC))
        if status != dict(_status(rs)):
            path = REPLICASETS.path(str(_meta(rs).get("namespace")), str(_meta(rs).get("name")))
            try:
                updated = self.merge_patch(
                    client, f"{path}/status", status_patch(_status(rs), status)
                )
            except ApiError as exc:
                if exc.code == 404:
                    return
                raise
            self.replicasets.observe(updated)
        if recheck is not None:
            self.queue.retry(key, recheck + 0.05)

    def _manage(self, client: ApiClient, rs: dict[str, Any]) -> None:
        namespace = str(_meta(rs).get("namespace"))
        active = [p for p in self.pods.controlled_by(_uid(rs)) if is_active(p)]
        missing = replicas(rs) - len(active)
        for _ in range(missing):
            created = client.request("POST", PODS.path(namespace), body=new_pod(rs))
            self.pods.observe(created)
            name = _meta(created).get("name")
            logger.info("pod created", extra={"replicaset": object_key(rs), "pod": name})
            self.record(client, rs, "SuccessfulCreate", f"Created pod: {name}")
        for pod in pods_to_delete(active, -missing):
            name = str(_meta(pod).get("name"))
            try:
                client.request(
                    "DELETE",
                    PODS.path(namespace, name),
                    body={
                        "kind": "DeleteOptions",
                        "apiVersion": "v1",
                        "preconditions": {"uid": _meta(pod).get("uid")},
                    },
                )
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise
            self.pods.forget(pod)
            logger.info("pod deleted", extra={"replicaset": object_key(rs), "pod": name})
            self.record(client, rs, "SuccessfulDelete", f"Deleted pod: {name}")


class DeploymentController(_WorkloadController):
    """Rolls each Deployment out through its ReplicaSets and reports progress in its status."""

    component = "deployment-controller"
    kind = "Deployment"

    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        self.deployments = Cache()
        self.replicasets = Cache()
        super().__init__(
            access,
            stop,
            [
                _Watched(DEPLOYMENTS, self.deployments),
                _Watched(REPLICASETS, self.replicasets, "Deployment"),
            ],
        )

    def sync(self, client: ApiClient, key: str) -> None:
        deployment = self.deployments.get(key)
        if deployment is None or _meta(deployment).get("deletionTimestamp"):
            return
        selector = _spec(deployment).get("selector") or {}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            logger.warning("deployment without a selector ignored", extra={"deployment": key})
            return
        owned = self.replicasets.controlled_by(_uid(deployment))
        new_rs = find_new_replica_set(deployment, owned)
        old = [rs for rs in owned if rs is not new_rs]
        created = False
        if _spec(deployment).get("paused"):
            if new_rs is not None and not any(replicas(rs) for rs in old):
                new_rs = self._scale(client, deployment, new_rs, replicas(deployment))
        else:
            if new_rs is None and (
                is_rolling(deployment) or not any(_int(_status(rs).get("replicas")) for rs in old)
            ):
                new_rs, created = self._create_new(client, deployment, old)
            elif new_rs is not None:
                new_rs = self._update_annotations(client, deployment, new_rs, old)
            new_rs, old = self._roll(client, deployment, new_rs, old)
        if new_rs is not None:
            deployment = self._set_revision(client, deployment, revision(new_rs))
        owned = [*old, *([new_rs] if new_rs is not None else [])]
        counts = deployment_counts(deployment, new_rs, owned)
        if _spec(deployment).get("paused") or deployment_complete(deployment, counts):
            old = self._clean_up(client, deployment, old)
            owned = [*old, *([new_rs] if new_rs is not None else [])]
        status = deployment_status(
            deployment, new_rs, owned, datetime.now(UTC), created_new=created
        )
        self._write_status(client, deployment, status)

    # steps ---------------------------------------------------------------------------------

    def _create_new(
        self, client: ApiClient, deployment: dict[str, Any], old: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]:
        """The ReplicaSet for the current template: created, or found after a stale cache."""
        meta = _meta(deployment)
        namespace = str(meta.get("namespace"))
        collisions = _status(deployment).get("collisionCount")
        template = _spec(deployment).get("template") or {}
        pod_hash = template_hash(template, _int(collisions) if collisions is not None else None)
        next_revision = max((revision(rs) for rs in old), default=0) + 1
        count = new_replica_set_target(deployment, None, old)
        body = new_replica_set(deployment, pod_hash, next_revision, count)
        try:
            created = client.request("POST", REPLICASETS.path(namespace), body=body)
        except ApiError as exc:
            if exc.code != 409:
                raise
            existing = client.get(REPLICASETS.path(namespace, str(body["metadata"]["name"])))
            owner = controller_of(existing)
            if (
                owner is not None
                and owner.get("uid") == meta.get("uid")
                and templates_equal(_spec(existing).get("template") or {}, template)
            ):
                self.replicasets.observe(existing)
                return existing, False
            # A different ReplicaSet holds the name: hash again with a higher collision count.
            patch = {"status": {"collisionCount": _int(collisions) + 1}}
            path = DEPLOYMENTS.path(namespace, str(meta.get("name")))
            self.deployments.observe(self.merge_patch(client, f"{path}/status", patch))
            raise
        self.replicasets.observe(created)
        logger.info(
            "replica set created",
            extra={"deployment": object_key(deployment), "replicaset": object_key(created)},
        )
        self.record(
            client,
            deployment,
            "ScalingReplicaSet",
            f"Scaled up replica set {_meta(created).get('name')} from 0 to {count}",
        )
        return created, True

    def _update_annotations(
        self,
        client: ApiClient,
        deployment: dict[str, Any],
        new_rs: dict[str, Any],
        old: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """Copy the Deployment's annotations to its current ReplicaSet and give it the next
        revision when it is an old one brought back (a rollback)."""
        current = {str(k): str(v) for k, v in (_meta(new_rs).get("annotations") or {}).items()}
        next_revision = max((revision(rs) for rs in old), default=0) + 1
        wanted = replica_set_annotations(deployment, current, next_revision)
        # The replica counts are written with each scaling, not on their own.
        for key in (DESIRED_REPLICAS, MAX_REPLICAS):
            if key in current:
                wanted[key] = current[key]
            else:
                wanted.pop(key, None)
        if wanted == current:
            return new_rs
        path = REPLICASETS.path(str(_meta(new_rs).get("namespace")), str(_meta(new_rs).get("name")))
        updated = self.merge_patch(client, path, {"metadata": {"annotations": wanted}})
        self.replicasets.observe(updated)
        return updated

    def _roll(
        self,
        client: ApiClient,
        deployment: dict[str, Any],
        new_rs: dict[str, Any] | None,
        old: list[dict[str, Any]],
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """One step of the rollout; returns the new and old ReplicaSets as they now are."""
        if not is_rolling(deployment):
            targets = old_replica_set_targets(deployment, new_rs, old)
            old = [self._scale_to(client, deployment, rs, targets) for rs in old]
            if new_rs is not None and not any(_int(_status(rs).get("replicas")) for rs in old):
                new_rs = self._scale(client, deployment, new_rs, replicas(deployment))
            return new_rs, old
        if new_rs is not None:
            target = new_replica_set_target(deployment, new_rs, old)
            if target != replicas(new_rs):
                # Like kube: scale one way per sync, and down only once the new pods count.
                return self._scale(client, deployment, new_rs, target), old
        targets = old_replica_set_targets(deployment, new_rs, old)
        return new_rs, [self._scale_to(client, deployment, rs, targets) for rs in old]

    def _scale_to(
        self,
        client: ApiClient,
        deployment: dict[str, Any],
        rs: dict[str, Any],
        targets: Mapping[str, int],
    ) -> dict[str, Any]:
        target = targets.get(str(_meta(rs).get("name")))
        if target is None:
            return rs
        return self._scale(client, deployment, rs, target)

    def _scale(
        self, client: ApiClient, deployment: dict[str, Any], rs: dict[str, Any], count: int
    ) -> dict[str, Any]:
        before = replicas(rs)
        annotations = _meta(rs).get("annotations") or {}
        surge, _ = fenceposts(deployment)
        wanted = {
            DESIRED_REPLICAS: str(replicas(deployment)),
            MAX_REPLICAS: str(replicas(deployment) + surge),
        }
        if before == count and all(annotations.get(k) == v for k, v in wanted.items()):
            return rs
        path = REPLICASETS.path(str(_meta(rs).get("namespace")), str(_meta(rs).get("name")))
        patch = {"metadata": {"annotations": wanted}, "spec": {"replicas": count}}
        updated = self.merge_patch(client, path, patch)
        self.replicasets.observe(updated)
        if before != count:
            direction = "up" if count > before else "down"
            name = _meta(rs).get("name")
            logger.info(
                "replica set scaled",
                extra={"replicaset": object_key(rs), "from": before, "to": count},
            )
            self.record(
                client,
                deployment,
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {name} to {count} from {before}",
            )
        return updated

    def _set_revision(
        self, client: ApiClient, deployment: dict[str, Any], number: int
    ) -> dict[str, Any]:
        if not number or revision(deployment) == number:
            return deployment
        meta = _meta(deployment)
        path = DEPLOYMENTS.path(str(meta.get("namespace")), str(meta.get("name")))
        updated = self.merge_patch(
            client, path, {"metadata": {"annotations": {REVISION: str(number)}}}
        )
        self.deployments.observe(updated)
        return updated

    def _clean_up(
        self, client: ApiClient, deployment: dict[str, Any], old: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        doomed = {_uid(rs) for rs in history_to_delete(deployment, old)}
        for rs in old:
            if _uid(rs) not in doomed:
                continue
            path = REPLICASETS.path(str(_meta(rs).get("namespace")), str(_meta(rs).get("name")))
            try:
                client.request(
                    "DELETE",
                    path,
                    body={
                        "kind": "DeleteOptions",
                        "apiVersion": "v1",
                        "preconditions": {"uid": _uid(rs)},
                    },
                )
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise
            self.replicasets.forget(rs)
            logger.info("old replica set deleted", extra={"replicaset": object_key(rs)})
        return [rs for rs in old if _uid(rs) not in doomed]

    def _write_status(
        self, client: ApiClient, deployment: dict[str, Any], status: dict[str, Any]
    ) -> None:
        if status == dict(_status(deployment)):
            return
        meta = _meta(deployment)
        path = DEPLOYMENTS.path(str(meta.get("namespace")), str(meta.get("name")))
        try:
            updated = self.merge_patch(
                client, f"{path}/status", status_patch(_status(deployment), status)
            )
        except ApiError as exc:
            if exc.code == 404:
                return
            raise
        self.deployments.observe(updated)
