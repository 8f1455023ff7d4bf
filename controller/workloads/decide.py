"""PodGroups for plain workloads, as Volcano's PodGroup controller (`pg-controller`) builds them.

A pod whose `schedulerName` is one of ours and that names no group (`scheduling.k8s.io/group-name`)
gets the PodGroup `podgroup-<uid>`: the uid of its controlling owner (ReplicaSet, StatefulSet,
batch Job, …), or its own for a bare pod. The PodGroup has the pod's owner references (so the
garbage collector deletes it with the owner), `minMember` from the owner's
`scheduling.volcano.sh/group-min-member` annotation (1 without it), `minResources` as that many
times the pod's quota usage, the queue from the pod's `scheduling.volcano.sh/queue-name`
annotation, the pod's priority class, the owner's `volcano.sh/` annotations and the pod's
preemption, cooldown, revocable-zone, budget and network-topology annotations. The pod is then
annotated with the group's name.

A ReplicaSet or StatefulSet scaled to zero loses its PodGroup; one that changes (a rollout, a
new annotation) brings its PodGroup in line with its first current pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from controller.job.decide.podgroup import pod_spec_usage
from shared import labels, quantity, wire
from shared.wire import (
    WireObject,
    annotations_of,
    controller_ref,
    deletion_timestamp,
    dig,
    labels_of,
    metadata,
    name_of,
    spec_of,
    status_of,
    uid_of,
)

PODGROUP_PREFIX: Final = "podgroup-"
GROUP_NAME_ANNOTATION: Final = labels.POD_GROUP_KEY
MIN_MEMBER_ANNOTATION: Final = "scheduling.volcano.sh/group-min-member"
QUEUE_NAME_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
# The owner's annotations a PodGroup inherits (Volcano's `--inherit-owner-annotations`).
INHERITED_PREFIX: Final = "volcano.sh/"
PREEMPTABLE: Final = "volcano.sh/preemptable"
COOLDOWN_TIME: Final = "volcano.sh/cooldown-time"
REVOCABLE_ZONE: Final = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE: Final = "volcano.sh/jdb-max-unavailable"
TOPOLOGY_MODE: Final = "volcano.sh/network-topology-mode"
TOPOLOGY_HIGHEST_TIER: Final = "volcano.sh/network-topology-highest-tier"
# The pod annotations and labels a PodGroup copies, over what it inherits from the owner.
COPIED_ANNOTATIONS: Final = (PREEMPTABLE, COOLDOWN_TIME, REVOCABLE_ZONE)
COPIED_LABELS: Final = (PREEMPTABLE, COOLDOWN_TIME)
# The owners whose annotations are read (Volcano's list).
ANNOTATED_OWNER_KINDS: Final = frozenset({"ReplicaSet", "DaemonSet", "StatefulSet", "Job"})
STATEFULSET_REVISION_LABEL: Final = "controller-revision-hash"


def needs_podgroup(pod: Mapping[str, Any], scheduler_names: Iterable[str]) -> bool:
    """A live pod of one of our schedulers that names no group."""
    if deletion_timestamp(pod):
        return False
    if _scheduler_name(pod) not in set(scheduler_names):
        return False
    return not annotations_of(pod).get(GROUP_NAME_ANNOTATION)


def _scheduler_name(pod: Mapping[str, Any]) -> str:
    return str(spec_of(pod).get("schedulerName") or "")


def in_own_group(pod: Mapping[str, Any], scheduler_names: Iterable[str]) -> bool:
    """The pod needs a group, or is in the one this controller makes for it."""
    if needs_podgroup(pod, scheduler_names):
        return True
    group = annotations_of(pod).get(GROUP_NAME_ANNOTATION)
    return (
        not deletion_timestamp(pod)
        and _scheduler_name(pod) in set(scheduler_names)
        and group == podgroup_name(pod)
    )


def podgroup_name(pod: Mapping[str, Any]) -> str:
    """`podgroup-<uid>`: the controlling owner's uid, else the pod's own."""
    ref = controller_ref(pod)
    uid = ref.get("uid") if ref is not None else metadata(pod).get("uid")
    return f"{PODGROUP_PREFIX}{uid or ''}"


def is_workload_group(podgroup: Mapping[str, Any]) -> bool:
    """A PodGroup this controller names (`podgroup-<uid>`), not a Volcano Job's."""
    return name_of(podgroup).startswith(PODGROUP_PREFIX)


def podgroup_name_of_owner(owner: Mapping[str, Any]) -> str:
    return f"{PODGROUP_PREFIX}{uid_of(owner)}"


def owner_references(pod: Mapping[str, Any]) -> list[WireObject]:
    """The pod's own references when one controls it; else the pod, as the controller."""
    refs: list[WireObject] = [dict(r) for r in wire.owner_references(pod)]
    if any(r.get("controller") is True for r in refs):
        return refs
    meta = metadata(pod)
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def min_member(owner_annotations: Mapping[str, str]) -> int:
    """The owner's `group-min-member` annotation; 1 when absent, not a number or negative."""
    raw = owner_annotations.get(MIN_MEMBER_ANNOTATION)
    if raw is None:
        return 1
    try:
        value = int(str(raw).strip())
    except ValueError:
        return 1
    return value if 0 <= value < 2**31 else 1


def pod_quota_usage(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the pod counts in resource quota: the job controller's rule for its tasks' pods
    (`controller.job.decide.podgroup.pod_spec_usage`)."""
    return pod_spec_usage(spec_of(pod))


def network_topology(pod_annotations: Mapping[str, str]) -> WireObject | None:
    """`networkTopology` from the pod's annotations: mode `hard` unless `soft` is asked for, and
    the highest tier when it is a number."""
    if TOPOLOGY_MODE not in pod_annotations and TOPOLOGY_HIGHEST_TIER not in pod_annotations:
        return None
    mode = str(pod_annotations.get(TOPOLOGY_MODE, "hard")).lower()
    out: WireObject = {"mode": mode if mode in ("hard", "soft") else "hard"}
    tier = pod_annotations.get(TOPOLOGY_HIGHEST_TIER)
    if tier is not None and str(tier).strip().lstrip("-").isdigit():
        out["highestTierAllowed"] = int(str(tier))
    return out


def build_podgroup(
    pod: Mapping[str, Any], owner_annotations: Mapping[str, str], *, inherit: bool = True
) -> WireObject:
    """The PodGroup Volcano's controller builds for `pod` (no status: the scheduler writes it)."""
    meta, spec = metadata(pod), spec_of(pod)
    pod_annotations = {str(k): str(v) for k, v in annotations_of(pod).items()}
    pod_labels = {str(k): str(v) for k, v in labels_of(pod).items()}
    inherited = owner_annotations if inherit else {}
    members = min_member(inherited)
    usage = pod_quota_usage(pod)
    group_spec: WireObject = {
        "minMember": members,
        "minResources": {
            name: quantity.render(value * members) for name, value in sorted(usage.items())
        },
    }
    if spec.get("priorityClassName"):
        group_spec["priorityClassName"] = spec["priorityClassName"]
    if pod_annotations.get(QUEUE_NAME_ANNOTATION):
        group_spec["queue"] = pod_annotations[QUEUE_NAME_ANNOTATION]
    topology = network_topology(pod_annotations)
    if topology is not None:
        group_spec["networkTopology"] = topology
    annotations = {k: v for k, v in inherited.items() if k.startswith(INHERITED_PREFIX)}
    annotations.update({k: pod_annotations[k] for k in COPIED_ANNOTATIONS if k in pod_annotations})
    if JDB_MIN_AVAILABLE in pod_annotations:
        annotations[JDB_MIN_AVAILABLE] = pod_annotations[JDB_MIN_AVAILABLE]
    elif JDB_MAX_UNAVAILABLE in pod_annotations:
        annotations[JDB_MAX_UNAVAILABLE] = pod_annotations[JDB_MAX_UNAVAILABLE]
    group_labels = {k: pod_labels[k] for k in COPIED_LABELS if k in pod_labels}
    return {
        "apiVersion": labels.SCHEDULING_API_VERSION,
        "kind": labels.PODGROUP_KIND,
        "metadata": {
            "name": podgroup_name(pod),
            "namespace": meta.get("namespace"),
            "ownerReferences": owner_references(pod),
            "annotations": annotations,
            "labels": group_labels,
        },
        "spec": group_spec,
    }


@dataclass(frozen=True)
class PodGroupPlan:
    """What to do for one pod: create the PodGroup, or replace the existing one's spec, labels
    and annotations (`update`, the whole new object), then annotate the pod with the group."""

    name: str
    create: WireObject | None = None
    update: WireObject | None = None
    annotate_pod: bool = False


def _same(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return (
        _spec_of(existing) == _spec_of(wanted)
        and labels_of(existing) == labels_of(wanted)
        and annotations_of(existing) == annotations_of(wanted)
    )


def _spec_of(group: Mapping[str, Any]) -> WireObject:
    """The spec as the controller writes it (the CRD's defaults — queue `default` — aside)."""
    spec = dict(spec_of(group))
    if spec.get("queue") == labels.DEFAULT_QUEUE and "queue" in spec:
        spec.pop("queue")
    resources = spec.get("minResources") or {}
    spec["minResources"] = {
        k: quantity.try_parse(v) for k, v in resources.items() if quantity.try_parse(v) != 0
    }
    return {k: v for k, v in spec.items() if v not in (None, {}, "")}


def plan_for_pod(
    pod: Mapping[str, Any],
    existing: Mapping[str, Any] | None,
    owner_annotations: Mapping[str, str],
    *,
    sync_existing: bool,
    inherit: bool = True,
) -> PodGroupPlan:
    """The PodGroup for `pod` (`in_own_group` holds). A new pod only gets a PodGroup that is
    missing (`sync_existing` False); its owner's add or change (a rollout, a new annotation)
    also brings an existing one in line (`sync_existing` True)."""
    wanted = build_podgroup(pod, owner_annotations, inherit=inherit)
    name = str(wanted["metadata"]["name"])
    annotate = not annotations_of(pod).get(GROUP_NAME_ANNOTATION)
    if existing is None:
        return PodGroupPlan(name, create=wanted, annotate_pod=annotate)
    if not sync_existing or _same(existing, wanted):
        return PodGroupPlan(name, annotate_pod=annotate)
    updated = dict(existing)
    meta = dict(metadata(existing))
    meta["labels"] = wanted["metadata"]["labels"]
    meta["annotations"] = wanted["metadata"]["annotations"]
    updated["metadata"] = meta
    spec = dict(wanted["spec"])
    # The queue the webhook or the CRD defaulted stays when the pod names none.
    if "queue" not in spec and spec_of(existing).get("queue"):
        spec["queue"] = existing["spec"]["queue"]
    updated["spec"] = spec
    return PodGroupPlan(name, update=updated, annotate_pod=annotate)


@dataclass(frozen=True)
class OwnerPlan:
    """What an owner's add or change asks for: delete its PodGroup (scaled to zero), or sync
    the PodGroup from `pod` (its first current pod, when it has one that needs a group)."""

    delete: str | None = None
    pod: Mapping[str, Any] | None = field(default=None)


def _matches(selector: Mapping[str, str], pod_labels: Mapping[str, Any]) -> bool:
    return all(pod_labels.get(k) == v for k, v in selector.items())


def plan_for_owner(
    owner: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], scheduler_names: Iterable[str]
) -> OwnerPlan:
    """A ReplicaSet or StatefulSet added or changed. Scaled to zero: its PodGroup goes. Else the
    first pod its selector's `matchLabels` pick in its namespace (for a StatefulSet, of its
    update revision) that needs a group is the one to sync the PodGroup from."""
    spec = spec_of(owner)
    replicas = spec.get("replicas")
    if replicas is not None and int(replicas) == 0:
        return OwnerPlan(delete=podgroup_name_of_owner(owner))
    match_labels = dig(spec, "selector", "matchLabels")
    selector = (
        {str(k): str(v) for k, v in match_labels.items()}
        if isinstance(match_labels, Mapping)
        else {}
    )
    if owner.get("kind") == "StatefulSet":
        selector[STATEFULSET_REVISION_LABEL] = str(status_of(owner).get("updateRevision") or "")
    namespace = metadata(owner).get("namespace")
    names = list(scheduler_names)
    for pod in sorted(pods, key=lambda p: str(metadata(p).get("name"))):
        if metadata(pod).get("namespace") != namespace:
            continue
        if not _matches(selector, labels_of(pod)):
            continue
        # Only the first pod counts: one in a group of its own making (a LeaderWorkerSet's) or of
        # another scheduler ends it; one in the group made here is synced again.
        return OwnerPlan(pod=pod if in_own_group(pod, names) else None)
    return OwnerPlan()
