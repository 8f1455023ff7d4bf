"""The gang scheduler's decisions, as a pure function over nodes, pods and PodGroups.

Admission: a Pending PodGroup becomes Inqueue when the cluster's free capacity (allocatable minus
the requests of bound, unfinished pods, minus what already-admitted groups still have to place)
covers its `spec.minResources`; groups are considered oldest first.

Queues, as Volcano's proportion/capacity plugins treat them: a PodGroup whose Queue is not Open is
not admitted, nor one whose `minResources` would take the queue's admitted total past its
`capability` or `deserved` (for the resources those name).

Placement: first-fit over nodes in name order. A gang's first placement is all-or-nothing: its pods
are bound only when at least `minMember` of them (counting those already bound) fit at once;
afterwards pods are placed one by one. Pods of the default scheduler are placed one by one.

What cannot be admitted or placed gets the `Unschedulable` condition (reason NotEnoughResources,
saying what is missing) and a Warning event, as Volcano's gang plugin writes them; an admitted
gang gets `Scheduled`. Each Queue's status (state, allocated, PodGroups per phase) is recomputed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
OPEN = "Open"
UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
GANG_READY = "tasks in gang are ready to be scheduled"
QUEUE_COUNTED_PHASES = ("pending", "running", "inqueue", "unknown", "completed")


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
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""

    def same(self, other: Condition) -> bool:
        """Equal but for the transition time."""
        return (self.type, self.status, self.reason, self.message) == (
            other.type,
            other.status,
            other.reason,
            other.message,
        )

    def as_wire(self) -> dict[str, Any]:
        out = {"type": self.type, "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        if self.last_transition_time:
            out["lastTransitionTime"] = self.last_transition_time
        return out


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
    queue: str = "default"
    conditions: tuple[Condition, ...] = ()

    @property
    def admitted(self) -> bool:
        return self.phase not in ("", PENDING)


@dataclass(frozen=True)
class QueueView:
    name: str
    state: str = ""
    capability: Resources = field(default_factory=dict)
    deserved: Resources = field(default_factory=dict)
    # The status as stored, to write only what changed.
    status: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PodGroupEvent:
    """A Warning event on a PodGroup."""

    namespace: str
    name: str
    reason: str
    message: str


@dataclass(frozen=True)
class QueueStatus:
    name: str
    status: Mapping[str, Any]


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
    conditions: tuple[Condition, ...] = ()

    def as_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "phase": self.phase,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }
        if self.conditions:
            status["conditions"] = [c.as_wire() for c in self.conditions]
        return status


@dataclass(frozen=True)
class Decisions:
    admit: tuple[tuple[str, str], ...] = ()
    bind: tuple[Binding, ...] = ()
    podgroup_status: tuple[PodGroupStatus, ...] = ()
    events: tuple[PodGroupEvent, ...] = ()
    queue_status: tuple[QueueStatus, ...] = ()


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
        queue=str(spec.get("queue") or "default"),
        conditions=tuple(
            Condition(
                type=str(c.get("type") or ""),
                status=str(c.get("status") or ""),
                reason=str(c.get("reason") or ""),
                message=str(c.get("message") or ""),
                last_transition_time=str(c.get("lastTransitionTime") or ""),
            )
            for c in status.get("conditions") or []
            if isinstance(c, Mapping)
        ),
    )


def queue_view(queue: Mapping[str, Any]) -> QueueView:
    spec = queue.get("spec") or {}
    status = queue.get("status") or {}
    return QueueView(
        name=str((queue.get("metadata") or {}).get("name", "")),
        state=str(status.get("state") or ""),
        capability=parse_resources(spec.get("capability")),
        deserved=parse_resources(spec.get("deserved")),
        status=dict(status),
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


def _shortfall(available: Resources, wanted: Resources, where: str) -> str | None:
    """The first resource (by name) `available` does not cover, worded for a condition."""
    for name in sorted(wanted):
        need = wanted[name]
        have = max(available.get(name, Decimal(0)), Decimal(0))
        if need and need > have:
            return (
                f"insufficient {name} {where}: the gang needs {render(need)}, {render(have)} left"
            )
    return None


def _queue_refusal(
    group: PodGroupView, queue: QueueView | None, used: Resources, known: bool
) -> str | None:
    """Why the group's queue refuses it now, or None."""
    if queue is None:
        return f"queue {group.queue} does not exist" if known else None
    if (queue.state or OPEN) != OPEN:
        return f"queue {queue.name} is {queue.state}: it admits no new PodGroups"
    for limit_name, limit in (("capability", queue.capability), ("deserved", queue.deserved)):
        if not limit:
            continue
        wanted = {k: v for k, v in group.min_resources.items() if k in limit}
        missing = _shortfall(subtract(limit, used), wanted, f"in queue {queue.name}'s {limit_name}")
        if missing is not None:
            return missing
    return None


def _admissions(
    podgroups: Sequence[PodGroupView],
    members: Mapping[tuple[str, str], Sequence[PodView]],
    nodes: Sequence[NodeView],
    free: Mapping[str, Resources],
    queues: Mapping[str, QueueView] | None = None,
) -> tuple[list[tuple[str, str]], dict[tuple[str, str], str]]:
    """The groups admitted now, and why each pending group that was not is refused.

    `queues` is None when the queues are not known yet (no queue rules apply then)."""
    available = add(*(clamp_at_zero(free[n.name]) for n in nodes if n.schedulable))
    used: dict[str, dict[str, Decimal]] = {}
    for group in podgroups:
        if group.admitted and group.phase in (INQUEUE, RUNNING):
            used[group.queue] = add(used.get(group.queue, {}), group.min_resources)
        if group.admitted and group.phase == INQUEUE:
            # Admitted but not yet placed: keep its remaining share out of reach of later groups.
            bound = add(
                *(p.requests for p in members.get((group.namespace, group.name), ()) if p.node_name)
            )
            available = subtract(available, clamp_at_zero(subtract(group.min_resources, bound)))
    admitted = []
    refused: dict[tuple[str, str], str] = {}
    for group in podgroups:
        if group.admitted:
            continue
        key = (group.namespace, group.name)
        queue = (queues or {}).get(group.queue)
        refusal = _queue_refusal(group, queue, used.get(group.queue, {}), queues is not None)
        if refusal is not None:
            refused[key] = refusal
            continue
        missing = _shortfall(available, group.min_resources, "in the cluster")
        if missing is None:
            admitted.append(key)
            available = subtract(available, group.min_resources)
            used[group.queue] = add(used.get(group.queue, {}), group.min_resources)
        else:
            refused[key] = missing
    return admitted, refused


def render(value: Decimal) -> str:
    """A quantity as Kubernetes prints a canonical one: `2`, `500m`."""
    if value == value.to_integral_value():
        return str(int(value))
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return str(value.normalize())


def _upsert(conditions: tuple[Condition, ...], new: Condition, now: str) -> tuple[Condition, ...]:
    """Replace the condition of `new.type` (kept as is, time included, when nothing changed)."""
    current = next((c for c in conditions if c.type == new.type), None)
    if current is not None and current.same(new):
        return conditions
    stamped = replace(new, last_transition_time=now)
    if current is None:
        return (*conditions, stamped)
    return tuple(stamped if c.type == new.type else c for c in conditions)


def _conditions(
    group: PodGroupView, admitted_now: bool, refusal: str | None, now: str
) -> tuple[Condition, ...]:
    """Unschedulable while refused; Scheduled once admitted (and Unschedulable turned False)."""
    conditions = group.conditions
    if refusal is not None:
        unschedulable = Condition(UNSCHEDULABLE, "True", NOT_ENOUGH_RESOURCES, refusal)
        return _upsert(conditions, unschedulable, now)
    was_refused = any(c.type == UNSCHEDULABLE and c.status == "True" for c in conditions)
    if was_refused and (admitted_now or group.admitted):
        conditions = _upsert(conditions, Condition(UNSCHEDULABLE, "False"), now)
    if admitted_now or (was_refused and group.admitted):
        conditions = _upsert(conditions, Condition(SCHEDULED, "True", GANG_READY), now)
    return conditions


def _group_status(
    group: PodGroupView,
    pods: Sequence[PodView],
    admitted_now: bool,
    refusal: str | None = None,
    now: str = "",
) -> PodGroupStatus:
    live = [p for p in pods if not p.terminating]
    running = sum(p.phase == RUNNING for p in live)
    succeeded = sum(p.phase == "Succeeded" for p in live)
    failed = sum(p.phase == "Failed" for p in live)
    phase = INQUEUE if admitted_now else (group.phase or PENDING)
    if phase == INQUEUE and running + succeeded >= group.min_member:
        phase = RUNNING
    conditions = _conditions(group, admitted_now, refusal, now)
    return PodGroupStatus(
        group.namespace, group.name, phase, running, succeeded, failed, conditions
    )


def _queue_status(
    queue: QueueView, groups: Sequence[PodGroupStatus], pods: Sequence[PodView]
) -> dict[str, Any]:
    """Volcano's queue status: state (an empty one becomes Open, as the queue controller does),
    what its bound pods take, and its PodGroups per phase."""
    allocated = add(*(p.requests for p in pods if p.occupies_node))
    status: dict[str, Any] = dict(queue.status)
    status["state"] = queue.state or OPEN
    status["allocated"] = {name: render(v) for name, v in sorted(allocated.items()) if v}
    for phase in QUEUE_COUNTED_PHASES:
        status[phase] = sum(1 for g in groups if (g.phase or PENDING).lower() == phase)
    return status


def schedule(
    nodes: Sequence[NodeView],
    pods: Sequence[PodView],
    podgroups: Sequence[PodGroupView],
    scheduler_name: str = GANG_SCHEDULER,
    queues: Sequence[QueueView] | None = None,
    now: str = "",
) -> Decisions:
    """Which PodGroups to admit, which pods to bind where, each PodGroup's new status, the
    Warning events to record and each Queue's new status.

    `queues` is None while the queues are unknown: no queue rules apply and no queue status is
    written."""
    ordered_nodes = sorted(nodes, key=lambda n: natural_key(n.name))
    ordered_groups = sorted(podgroups, key=lambda g: (g.created, g.namespace, g.name))
    free = _free_per_node(ordered_nodes, pods)

    members: dict[tuple[str, str], list[PodView]] = {}
    for pod in pods:
        if pod.group:
            members.setdefault((pod.namespace, pod.group), []).append(pod)

    queue_map = None if queues is None else {q.name: q for q in queues}
    admitted, refused = _admissions(ordered_groups, members, ordered_nodes, free, queue_map)
    admitted_set = set(admitted)
    groups = {(g.namespace, g.name): g for g in ordered_groups}

    # Units of placement, oldest first: a whole gang, or a single pod.
    units: list[tuple[str, int, list[PodView], tuple[str, str] | None]] = []
    for key, group in groups.items():
        waiting = [
            p for p in members.get(key, ()) if p.waiting and p.scheduler_name == scheduler_name
        ]
        if waiting and (group.admitted or key in admitted_set):
            already = sum(1 for p in members.get(key, ()) if p.node_name and p.phase != "Failed")
            waiting.sort(key=lambda p: (p.created, natural_key(p.name)))
            units.append((group.created, max(group.min_member - already, 1), waiting, key))
    for pod in pods:
        if not pod.waiting:
            continue
        lone_gang_pod = pod.scheduler_name == scheduler_name and not pod.group
        if lone_gang_pod or pod.scheduler_name in DEFAULT_SCHEDULERS:
            units.append((pod.created, 1, [pod], None))
    units.sort(key=lambda unit: unit[0])

    bindings: list[Binding] = []
    for _, needed, candidates, gang_key in units:
        trial = {name: dict(amount) for name, amount in free.items()}
        placed = _place(candidates, ordered_nodes, trial)
        if len(placed) >= needed:
            free = trial
            bindings.extend(placed)
        elif gang_key is not None:
            refused[gang_key] = (
                f"{len(candidates) - len(placed)}/{len(candidates)} tasks in gang unschedulable: "
                f"pod group is not ready, {groups[gang_key].min_member} minAvailable, "
                f"only {len(placed)} of the {needed} still needed fit on the nodes"
            )

    statuses: list[PodGroupStatus] = []
    changed: list[PodGroupStatus] = []
    events: list[PodGroupEvent] = []
    for key, group in groups.items():
        status = _group_status(
            group, members.get(key, ()), key in admitted_set, refused.get(key), now
        )
        statuses.append(status)
        current = PodGroupStatus(
            group.namespace,
            group.name,
            group.phase,
            group.running,
            group.succeeded,
            group.failed,
            group.conditions,
        )
        if status != current:
            changed.append(status)
        if key in refused and status.conditions != group.conditions:
            events.append(PodGroupEvent(key[0], key[1], UNSCHEDULABLE, refused[key]))
    queue_updates: list[QueueStatus] = []
    for queue in queues or ():
        in_queue = [
            s for s, g in zip(statuses, groups.values(), strict=True) if g.queue == queue.name
        ]
        group_keys = {(s.namespace, s.name) for s in in_queue}
        queue_pods = [p for p in pods if (p.namespace, p.group) in group_keys]
        new_status = _queue_status(queue, in_queue, queue_pods)
        if new_status != dict(queue.status):
            queue_updates.append(QueueStatus(queue.name, new_status))
    return Decisions(
        admit=tuple(admitted),
        bind=tuple(bindings),
        podgroup_status=tuple(changed),
        events=tuple(events),
        queue_status=tuple(queue_updates),
    )
