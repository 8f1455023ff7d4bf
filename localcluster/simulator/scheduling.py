"""The gang scheduler's decisions, as a pure function over nodes, pods and PodGroups.

Admission: a Pending PodGroup becomes Inqueue when the cluster's free capacity (allocatable minus
the requests of bound, unfinished pods, minus what already-admitted groups still have to place)
covers its `spec.minResources`; groups are considered oldest first.

Placement: first-fit over nodes in name order. A gang's first placement is all-or-nothing: its pods
are bound only when at least `minMember` of them (counting those already bound) fit at once;
afterwards pods are placed one by one. Pods of the default scheduler are placed one by one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from localcluster.simulator.resources import (
    Resources,
    add,
    clamp_at_zero,
    covers,
    parse_resources,
    pod_requests,
    subtract,
)
from shared.labels import POD_GROUP_KEY

GANG_SCHEDULER = "volcano"
DEFAULT_SCHEDULERS = frozenset({"", "default-scheduler"})
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
PENDING = "Pending"
INQUEUE = "Inqueue"
RUNNING = "Running"


@dataclass(frozen=True)
class NodeView:
    name: str
    allocatable: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    schedulable: bool = True


@dataclass(frozen=True)
class PodView:
    namespace: str
    name: str
    requests: Resources
    node_name: str = ""
    phase: str = PENDING
    scheduler_name: str = ""
    group: str = ""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    terminating: bool = False
    created: str = ""

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_PHASES

    @property
    def occupies_node(self) -> bool:
        """Bound and not finished: its requests are taken from the node (terminating ones too)."""
        return bool(self.node_name) and not self.finished

    @property
    def waiting(self) -> bool:
        return not self.node_name and not self.terminating and self.phase in ("", PENDING)


@dataclass(frozen=True)
class PodGroupView:
    namespace: str
    name: str
    min_member: int = 0
    min_resources: Resources = field(default_factory=dict)
    phase: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    created: str = ""

    @property
    def admitted(self) -> bool:
        return self.phase not in ("", PENDING)


@dataclass(frozen=True)
class Binding:
    namespace: str
    pod: str
    node: str


@dataclass(frozen=True)
class PodGroupStatus:
    namespace: str
    name: str
    phase: str
    running: int
    succeeded: int
    failed: int

    def as_status(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }


@dataclass(frozen=True)
class Decisions:
    admit: tuple[tuple[str, str], ...] = ()
    bind: tuple[Binding, ...] = ()
    podgroup_status: tuple[PodGroupStatus, ...] = ()


# -- views of wire objects -------------------------------------------------------------------


def node_view(node: Mapping[str, Any]) -> NodeView:
    metadata = node.get("metadata") or {}
    status = node.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return NodeView(
        name=str(metadata.get("name", "")),
        allocatable=parse_resources(status.get("allocatable") or status.get("capacity")),
        labels=dict(metadata.get("labels") or {}),
        schedulable=ready and not (node.get("spec") or {}).get("unschedulable", False),
    )


def pod_view(pod: Mapping[str, Any]) -> PodView:
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = metadata.get("annotations") or {}
    return PodView(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        requests=pod_requests(spec),
        node_name=str(spec.get("nodeName") or ""),
        phase=str((pod.get("status") or {}).get("phase") or PENDING),
        scheduler_name=str(spec.get("schedulerName") or ""),
        group=str(annotations.get(POD_GROUP_KEY) or ""),
        node_selector=dict(spec.get("nodeSelector") or {}),
        terminating=bool(metadata.get("deletionTimestamp")),
        created=str(metadata.get("creationTimestamp") or ""),
    )


def podgroup_view(podgroup: Mapping[str, Any]) -> PodGroupView:
    metadata = podgroup.get("metadata") or {}
    spec = podgroup.get("spec") or {}
    status = podgroup.get("status") or {}
    return PodGroupView(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        min_member=int(spec.get("minMember") or 0),
        min_resources=parse_resources(spec.get("minResources")),
        phase=str(status.get("phase") or ""),
        running=int(status.get("running") or 0),
        succeeded=int(status.get("succeeded") or 0),
        failed=int(status.get("failed") or 0),
        created=str(metadata.get("creationTimestamp") or ""),
    )


# -- decisions -------------------------------------------------------------------------------


def natural_key(name: str) -> tuple[Any, ...]:
    """`node-2` before `node-10`."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _free_per_node(
    nodes: Sequence[NodeView], pods: Iterable[PodView]
) -> dict[str, dict[str, Decimal]]:
    free = {node.name: dict(node.allocatable) for node in nodes}
    for pod in pods:
        if pod.occupies_node and pod.node_name in free:
            free[pod.node_name] = subtract(free[pod.node_name], pod.requests)
    return free


def _first_fit(
    pod: PodView, nodes: Sequence[NodeView], free: Mapping[str, Resources]
) -> str | None:
    for node in nodes:
        if not node.schedulable:
            continue
        if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
            continue
        if covers(free[node.name], pod.requests):
            return node.name
    return None


def _place(
    pods: Sequence[PodView],
    nodes: Sequence[NodeView],
    free: dict[str, dict[str, Decimal]],
) -> list[Binding]:
    """First-fit each pod in turn, taking the capacity from `free` as it goes."""
    placed = []
    for pod in pods:
        node = _first_fit(pod, nodes, free)
        if node is not None:
            free[node] = subtract(free[node], pod.requests)
            placed.append(Binding(pod.namespace, pod.name, node))
    return placed


def _admissions(
    podgroups: Sequence[PodGroupView],
    members: Mapping[tuple[str, str], Sequence[PodView]],
    nodes: Sequence[NodeView],
    free: Mapping[str, Resources],
) -> list[tuple[str, str]]:
    available = add(*(clamp_at_zero(free[n.name]) for n in nodes if n.schedulable))
    for group in podgroups:
        if group.admitted and group.phase == INQUEUE:
            # Admitted but not yet placed: keep its remaining share out of reach of later groups.
            bound = add(
                *(p.requests for p in members.get((group.namespace, group.name), ()) if p.node_name)
            )
            available = subtract(available, clamp_at_zero(subtract(group.min_resources, bound)))
    admitted = []
    for group in podgroups:
        if group.admitted:
            continue
        if covers(available, group.min_resources):
            admitted.append((group.namespace, group.name))
            available = subtract(available, group.min_resources)
    return admitted


def _group_status(
    group: PodGroupView, pods: Sequence[PodView], admitted_now: bool
) -> PodGroupStatus:
    live = [p for p in pods if not p.terminating]
    running = sum(p.phase == RUNNING for p in live)
    succeeded = sum(p.phase == "Succeeded" for p in live)
    failed = sum(p.phase == "Failed" for p in live)
    phase = INQUEUE if admitted_now else (group.phase or PENDING)
    if phase == INQUEUE and running + succeeded >= group.min_member:
        phase = RUNNING
    return PodGroupStatus(group.namespace, group.name, phase, running, succeeded, failed)


def schedule(
    nodes: Sequence[NodeView],
    pods: Sequence[PodView],
    podgroups: Sequence[PodGroupView],
    scheduler_name: str = GANG_SCHEDULER,
) -> Decisions:
    """Which PodGroups to admit, which pods to bind where, and each PodGroup's new status."""
    ordered_nodes = sorted(nodes, key=lambda n: natural_key(n.name))
    ordered_groups = sorted(podgroups, key=lambda g: (g.created, g.namespace, g.name))
    free = _free_per_node(ordered_nodes, pods)

    members: dict[tuple[str, str], list[PodView]] = {}
    for pod in pods:
        if pod.group:
            members.setdefault((pod.namespace, pod.group), []).append(pod)

    admitted = _admissions(ordered_groups, members, ordered_nodes, free)
    admitted_set = set(admitted)
    groups = {(g.namespace, g.name): g for g in ordered_groups}

    # Units of placement, oldest first: a whole gang, or a single pod.
    units: list[tuple[str, int, list[PodView]]] = []
    for key, group in groups.items():
        waiting = [
            p for p in members.get(key, ()) if p.waiting and p.scheduler_name == scheduler_name
        ]
        if waiting and (group.admitted or key in admitted_set):
            already = sum(1 for p in members.get(key, ()) if p.node_name and p.phase != "Failed")
            waiting.sort(key=lambda p: (p.created, natural_key(p.name)))
            units.append((group.created, max(group.min_member - already, 1), waiting))
    for pod in pods:
        if not pod.waiting:
            continue
        lone_gang_pod = pod.scheduler_name == scheduler_name and not pod.group
        if lone_gang_pod or pod.scheduler_name in DEFAULT_SCHEDULERS:
            units.append((pod.created, 1, [pod]))
    units.sort(key=lambda unit: unit[0])

    bindings: list[Binding] = []
    for _, needed, candidates in units:
        trial = {name: dict(amount) for name, amount in free.items()}
        placed = _place(candidates, ordered_nodes, trial)
        if len(placed) >= needed:
            free = trial
            bindings.extend(placed)

    statuses = []
    for key, group in groups.items():
        status = _group_status(group, members.get(key, ()), key in admitted_set)
        current = PodGroupStatus(
            group.namespace, group.name, group.phase, group.running, group.succeeded, group.failed
        )
        if status != current:
            statuses.append(status)
    return Decisions(admit=tuple(admitted), bind=tuple(bindings), podgroup_status=tuple(statuses))
