"""The order in which a plan's objects are written, fixed by their kind, not by where a concern
put them in the plan: Kueue's Workload first (it decides whether anything runs), then the
PodGroup (the gang exists before its members), the volumes, kube-scheduler's own gang, the plugin
objects, and the pods last. On update, the plugin objects go before the PodGroup, as Volcano's
`initOnJobUpdate`: a conflict on the PodGroup (its status is written often) must not hold the
hosts ConfigMap back. They also go before the creates, as Volcano updates them before it creates
pods: a pod created on a scale-up reads the new hosts (its `VC_*_HOSTS` environment never changes
afterwards). The PodGroups' updates stay after the creates, so that a conflict on one holds no pod
back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from controller.job.decide import kueue, nativegang
from shared import labels
from shared.wire import WireObject

KUEUE_GROUP: Final = kueue.API_VERSION.split("/")[0]
NATIVE_GANG_GROUP: Final = nativegang.API_VERSION.split("/")[0]
VOLCANO_SCHEDULING_GROUP: Final = labels.SCHEDULING_API_VERSION.split("/")[0]


def _group(obj: WireObject) -> str:
    api_version = str(obj.get("apiVersion") or "v1")
    return api_version.split("/")[0] if "/" in api_version else ""


def creation_rank(obj: WireObject) -> int:
    group, kind = _group(obj), obj.get("kind")
    if group == KUEUE_GROUP:
        return 0
    if group == VOLCANO_SCHEDULING_GROUP and kind == labels.PODGROUP_KIND:
        return 1
    if kind == "PersistentVolumeClaim":
        return 2
    if group == NATIVE_GANG_GROUP:
        return 3
    if kind == "Pod":
        return 5
    return 4  # the plugin objects: Service, ConfigMap, Secret, NetworkPolicy


def update_rank(obj: WireObject) -> int:
    return 1 if obj.get("kind") == labels.PODGROUP_KIND else 0


def creates_in_order(objects: Iterable[WireObject]) -> list[WireObject]:
    """Stable: objects of one rank keep the order the plan gave them (a native gang's Workload
    before its PodGroup, pods by task and index)."""
    return sorted(objects, key=creation_rank)


def updates_in_order(objects: Iterable[WireObject]) -> list[WireObject]:
    return sorted(objects, key=update_rank)


def updates_around_creates(
    objects: Iterable[WireObject],
) -> tuple[list[WireObject], list[WireObject]]:
    """(the updates written before the creates, those written after): the PodGroups last."""
    ordered = updates_in_order(objects)
    return (
        [o for o in ordered if update_rank(o) == 0],
        [o for o in ordered if update_rank(o) != 0],
    )
