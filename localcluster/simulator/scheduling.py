"""The gang scheduler's decisions, as a pure function over nodes, pods and PodGroups.

Admission: a Pending PodGroup becomes Inqueue when the cluster's free capacity (allocatable minus
the requests of bound, unfinished pods, minus what already-admitted groups still have to place)
covers its `spec.minResources`; groups are considered oldest first. Like Volcano's enqueue action
this counts every node's capacity: where the pods may go is for placement to find out.

Queues, as Volcano's proportion/capacity plugins treat them: a PodGroup whose Queue is not Open is
not admitted, nor one whose `minResources` would take the queue's admitted total past its
`capability` or `deserved` (for the resources those name).

Placement: first-fit over nodes in name order, each node filtered as kube-scheduler filters it
(`predicates.py`: cordon, taints and tolerations, nodeSelector and required node affinity, host
ports, resources). A gang's first placement is all-or-nothing: its pods are bound only when at least
`minMember` of them (counting those already bound) fit at once; afterwards pods are placed one by
one. Pods of other schedulers (kube-scheduler's included) are left alone, but what they take from
their nodes counts.

An admitted gang whose ready members (bound, running or succeeded) fall below `minMember` while
some of them still run — pods deleted, failed, or replacements that fit nowhere — is `Unknown`
(`gang_phase`), as Volcano's scheduler marks it; it is Running again once `minMember` are ready,
and Pending (to be admitted afresh) when none of it runs any more.

What cannot be admitted or placed gets the `Unschedulable` condition (reason NotEnoughResources,
saying what is missing) and a Warning event, as Volcano's gang plugin writes them; an admitted
gang gets `Scheduled`. When a pod of the gang is larger than every node, even an empty one, the
condition says so instead of counting the cluster's capacity (`pod w-0 requests cpu 32 but the
largest node has 24 allocatable: no node can run it`): more nodes of the same size would not help.
A pod left waiting gets `PodScheduled: False` with kube-scheduler's message
(`0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.`) and a
FailedScheduling event. Each Queue's status (state, allocated, PodGroups per phase) is recomputed.

It stays one module: one scheduling cycle (admission per Queue, gang placement, the phases and
conditions it writes) is a single pure decision whose steps read each other's intermediate
results; the node predicates are apart already (`predicates`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal
from typing import Any

from localcluster.simulator.predicates import (
    HostPort,
    NodeFacts,
    Placement,
    fit_error,
    fit_failures,
    insufficient_resources,
    read_host_ports,
    read_node_selector,
    read_required_terms,
    read_taints,
    read_tolerations,
    resource_order,
)
from localcluster.simulator.resources import (
    POD_SLOT,
    Resources,
    add,
    clamp_at_zero,
    parse_resources,
    pod_requests,
    subtract,
)
from shared.labels import POD_GROUP_KEY, QUEUE_ALLOCATION_GATE_KEY
from shared.wire import (
    annotations_of,
    creation_timestamp,
    deletion_timestamp,
    labels_of,
    metadata,
    podgroup_spec,
    podgroup_status,
    spec_of,
    status_of,
    uid_of,
)

GANG_SCHEDULER = "volcano"
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
PENDING = "Pending"
INQUEUE = "Inqueue"
RUNNING = "Running"
UNKNOWN = "Unknown"
COMPLETED = "Completed"
# Phases of a gang the scheduler admitted: its pods are placed, its resources held.
ADMITTED_PHASES = frozenset({INQUEUE, RUNNING, UNKNOWN})
OPEN = "Open"
UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
GANG_READY = "tasks in gang are ready to be scheduled"
QUEUE_COUNTED_PHASES = ("pending", "running", "inqueue", "unknown", "completed")
POD_SCHEDULED = "PodScheduled"
# The PodScheduled reason Volcano gives a waiting pod that fits now while its gang does not.
SCHEDULABLE = "Schedulable"
# The event reason of a pod left waiting, kube-scheduler's and Volcano's alike.
FAILED_SCHEDULING = "FailedScheduling"
NO_NODE_RUNS_IT = "no node can run it"
# Amounts of these resources are bytes, shown in the largest binary unit that divides them.
BYTE_RESOURCES = ("memory", "ephemeral-storage")
BYTE_UNITS = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


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
class NodeView(NodeFacts):
    allocatable: Resources = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class PodView(Placement):
    namespace: str
    name: str
    uid: str = ""
    node_name: str = ""
    phase: str = PENDING
    scheduler_name: str = ""
    group: str = ""
    terminating: bool = False
    # spec.schedulingGates: no scheduler considers the pod until they are removed.
    gated: bool = False
    # Gated by Volcano's queue allocation gate alone, and opted in by its annotation: the gang
    # scheduler lifts the gate once the pod's gang is admitted to its queue.
    queue_gated: bool = False
    created: str = ""
    # The pod's PodScheduled condition as stored, to write only what changed.
    scheduled: Condition | None = None

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_PHASES

    @property
    def occupies_node(self) -> bool:
        """Bound and not finished: its requests are taken from the node (terminating ones too)."""
        return bool(self.node_name) and not self.finished

    @property
    def waiting(self) -> bool:
        return (
            not self.node_name
            and not self.terminating
            and not self.gated
            and self.phase in ("", PENDING)
        )

    @property
    def task_status(self) -> str:
        """The pod's task status as Volcano's scheduler counts it."""
        if self.phase in ("", PENDING):
            if self.terminating:
                return "Releasing"
            return "Bound" if self.node_name else PENDING
        if self.phase == RUNNING:
            return "Releasing" if self.terminating else RUNNING
        return self.phase if self.phase in FINISHED_PHASES else "Unknown"


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
class PodSchedulingFailure:
    """A waiting pod's `PodScheduled: False` condition, and the FailedScheduling event saying so."""

    namespace: str
    name: str
    uid: str
    reason: str
    message: str

    def condition(self) -> Condition:
        return Condition(POD_SCHEDULED, "False", self.reason, self.message)


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
    unschedulable_pods: tuple[PodSchedulingFailure, ...] = ()
    # Pods (namespace, name) whose queue allocation gate to lift: their gang is in its queue.
    ungate: tuple[tuple[str, str], ...] = ()


# -- views of wire objects -------------------------------------------------------------------


def node_view(node: Mapping[str, Any]) -> NodeView:
    """The node as the scheduler sees it. Readiness is not read: the node lifecycle controller
    taints a node that is not Ready (`node.kubernetes.io/not-ready`, `…/unreachable`), and the
    taints keep pods away, as for kube-scheduler and Volcano."""
    spec, status = spec_of(node), status_of(node)
    return NodeView(
        name=str(metadata(node).get("name", "")),
        labels={str(k): str(v) for k, v in labels_of(node).items()},
        taints=read_taints(spec),
        unschedulable=bool(spec.get("unschedulable", False)),
        allocatable=parse_resources(status.get("allocatable") or status.get("capacity")),
    )


def _condition_view(raw: Mapping[str, Any]) -> Condition:
    return Condition(
        type=str(raw.get("type") or ""),
        status=str(raw.get("status") or ""),
        reason=str(raw.get("reason") or ""),
        message=str(raw.get("message") or ""),
        last_transition_time=str(raw.get("lastTransitionTime") or ""),
    )


def pod_view(pod: Mapping[str, Any]) -> PodView:
    meta, spec, status = metadata(pod), spec_of(pod), status_of(pod)
    annotations = annotations_of(pod)
    scheduled = next(
        (
            _condition_view(c)
            for c in status.get("conditions") or []
            if isinstance(c, Mapping) and c.get("type") == POD_SCHEDULED
        ),
        None,
    )
    return PodView(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=uid_of(pod),
        requests=pod_requests(spec),
        node_selector=read_node_selector(spec),
        required_terms=read_required_terms(spec),
        tolerations=read_tolerations(spec),
        host_ports=read_host_ports(spec),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or PENDING),
        scheduler_name=str(spec.get("schedulerName") or ""),
        group=str(annotations.get(POD_GROUP_KEY) or ""),
        terminating=deletion_timestamp(pod) is not None,
        gated=bool(spec.get("schedulingGates")),
        queue_gated=spec.get("schedulingGates") == [{"name": QUEUE_ALLOCATION_GATE_KEY}]
        and annotations.get(QUEUE_ALLOCATION_GATE_KEY) == "true",
        created=creation_timestamp(pod) or "",
        scheduled=scheduled,
    )


def podgroup_view(podgroup: Mapping[str, Any]) -> PodGroupView:
    meta, spec, status = metadata(podgroup), podgroup_spec(podgroup), podgroup_status(podgroup)
    return PodGroupView(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        min_member=int(spec.get("minMember") or 0),
        min_resources=parse_resources(spec.get("minResources")),
        phase=str(status.get("phase") or ""),
        running=int(status.get("running") or 0),
        succeeded=int(status.get("succeeded") or 0),
        failed=int(status.get("failed") or 0),
        created=creation_timestamp(podgroup) or "",
        queue=str(spec.get("queue") or "default"),
        conditions=tuple(
            _condition_view(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)
        ),
    )


def queue_view(queue: Mapping[str, Any]) -> QueueView:
    spec, status = spec_of(queue), status_of(queue)
    return QueueView(
        name=str(metadata(queue).get("name", "")),
        state=str(status.get("state") or ""),
        capability=parse_resources(spec.get("capability")),
        deserved=parse_resources(spec.get("deserved")),
        status=dict(status),
    )


# -- decisions -------------------------------------------------------------------------------


def natural_key(name: str) -> tuple[Any, ...]:
    """`node-2` before `node-10`."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


@dataclass
class _Capacity:
    """What is left on each node: resources, and the host ports bound pods hold."""

    free: dict[str, dict[str, Decimal]]
    ports: dict[str, list[HostPort]]

    @classmethod
    def of(cls, nodes: Sequence[NodeView], pods: Iterable[PodView]) -> _Capacity:
        capacity = cls({n.name: dict(n.allocatable) for n in nodes}, {n.name: [] for n in nodes})
        for pod in pods:
            if pod.occupies_node and pod.node_name in capacity.free:
                capacity.take(pod, pod.node_name)
        return capacity

    def copy(self) -> _Capacity:
        return _Capacity(
            {name: dict(left) for name, left in self.free.items()},
            {name: list(held) for name, held in self.ports.items()},
        )

    def take(self, pod: PodView, node: str) -> None:
        self.free[node] = subtract(self.free[node], pod.requests)
        self.ports[node].extend(pod.host_ports)


def _first_fit(
    pod: PodView, nodes: Sequence[NodeView], capacity: _Capacity
) -> tuple[str | None, str]:
    """The first node the pod fits on, or None and kube-scheduler's message saying why not."""
    failures = []
    for node in nodes:
        reasons = fit_failures(pod, node, capacity.free[node.name], capacity.ports[node.name])
        if not reasons:
            return node.name, ""
        failures.append(reasons)
    return None, fit_error(len(nodes), failures)


def _place(
    pods: Sequence[PodView], nodes: Sequence[NodeView], capacity: _Capacity
) -> tuple[list[Binding], list[tuple[PodView, str]]]:
    """First-fit each pod in turn, taking from `capacity` as it goes: the bindings, and each pod
    that fits nowhere with the reason."""
    placed = []
    unfit = []
    for pod in pods:
        node, why = _first_fit(pod, nodes, capacity)
        if node is None:
            unfit.append((pod, why))
        else:
            capacity.take(pod, node)
            placed.append(Binding(pod.namespace, pod.name, node))
    return placed, unfit


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


def _largest(nodes: Sequence[NodeView], name: str) -> Decimal:
    return max((n.allocatable.get(name, Decimal(0)) for n in nodes), default=Decimal(0))


def _in_bytes(name: str) -> bool:
    return name in BYTE_RESOURCES or name.startswith("hugepages-")


def _amount(name: str, value: Decimal) -> str:
    """`render`, with byte amounts in binary units: `32Gi`."""
    if _in_bytes(name):
        for suffix, unit in BYTE_UNITS:
            if value >= unit and value % unit == 0:
                return f"{int(value // unit)}{suffix}"
    return render(value)


def _largest_has(name: str, largest: Decimal) -> str:
    if largest <= 0:
        return f"no node has {name}"
    return f"the largest node has {_amount(name, largest)} allocatable"


def pod_beyond_every_node(pod: PodView, nodes: Sequence[NodeView]) -> str | None:
    """Why no node could run the pod even with nothing else on it, naming the first resource (in
    NodeResourcesFit's order) it asks more of than the largest node has; None when some node's
    allocatable covers its requests, or when there are no nodes."""
    if not nodes or any(not insufficient_resources(n.allocatable, pod.requests) for n in nodes):
        return None
    for name in sorted(pod.requests, key=resource_order):
        wanted, largest = pod.requests[name], _largest(nodes, name)
        if wanted > largest:
            return (
                f"pod {pod.name} requests {name} {_amount(name, wanted)} but "
                f"{_largest_has(name, largest)}: {NO_NODE_RUNS_IT}"
            )
    # Each resource fits some node, but no node has all of them.
    asked = ", ".join(
        f"{name} {_amount(name, pod.requests[name])}"
        for name in sorted(pod.requests, key=resource_order)
        if pod.requests[name] > 0 and name != POD_SLOT
    )
    return (
        f"pod {pod.name} requests {asked} but no node has all of it allocatable: {NO_NODE_RUNS_IT}"
    )


def gang_beyond_every_node(group: PodGroupView, nodes: Sequence[NodeView]) -> str | None:
    """`pod_beyond_every_node` from the PodGroup alone, before its pods exist (a Job's pods are
    created once the gang is admitted): `minResources` is what its `minMember` pods request
    together, so when it holds more of a resource than `minMember` times the largest node's
    allocatable, at least one of those pods asks more than any node has."""
    count = group.min_member
    if count <= 0 or not nodes:
        return None
    for name in sorted(group.min_resources, key=resource_order):
        total, largest = group.min_resources[name], _largest(nodes, name)
        if total <= largest * count:
            continue
        if count == 1:
            return (
                f"the gang's pod requests {name} {_amount(name, total)} but "
                f"{_largest_has(name, largest)}: {NO_NODE_RUNS_IT}"
            )
        # The largest pod asks at least the average, rounded up to the resource's quantum.
        quantum = Decimal(1) if _in_bytes(name) else Decimal("0.001")
        least = (total / count).quantize(quantum, rounding=ROUND_CEILING)
        return (
            f"the gang's {count} pods request {name} {_amount(name, total)} in all, one of them "
            f"at least {_amount(name, least)}, but {_largest_has(name, largest)}: "
            f"{NO_NODE_RUNS_IT}"
        )
    return None


def _beyond_every_node(
    group: PodGroupView, pods: Sequence[PodView], nodes: Sequence[NodeView]
) -> str | None:
    """Whether the gang has a pod no node could run: read from its pods when it has some, else
    from its `minResources`."""
    live = sorted(
        (p for p in pods if not p.finished and not p.terminating),
        key=lambda p: (p.created, natural_key(p.name)),
    )
    if not live:
        return gang_beyond_every_node(group, nodes)
    return next((m for p in live if (m := pod_beyond_every_node(p, nodes)) is not None), None)


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
    available = add(*(clamp_at_zero(free[n.name]) for n in nodes))
    used: dict[str, dict[str, Decimal]] = {}
    for group in podgroups:
        if group.phase in ADMITTED_PHASES:
            used[group.queue] = add(used.get(group.queue, {}), group.min_resources)
        if group.phase in (INQUEUE, UNKNOWN):
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
            # A pod larger than every node is the cause to name: more capacity would not help.
            refused[key] = _beyond_every_node(group, members.get(key, ()), nodes) or missing
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


def gang_phase(
    current: str,
    admitted_now: bool,
    min_member: int,
    running: int,
    succeeded: int,
    ready: int,
    *,
    completed: bool = False,
) -> str:
    """The gang's phase after a round. `running` and `succeeded` count its live pods in those
    phases, `ready` those bound (this round too), running or succeeded.

    Pending → Inqueue when admitted; Inqueue → Running once `minMember` run or succeeded. An
    admitted gang with running members but fewer than `minMember` ready is Unknown (Volcano's
    scheduler: running tasks and the gang unschedulable in one scheduling cycle); Unknown →
    Running once `minMember` are ready again, → Pending when none runs.

    `completed`: every member finished, at least `minMember` of them after being placed — an
    admitted gang is then Completed, as Volcano's scheduler marks it; new members take a
    Completed gang back to Running (or Pending, to be admitted afresh)."""
    phase = INQUEUE if admitted_now else (current or PENDING)
    if phase in ADMITTED_PHASES | {COMPLETED}:
        if completed:
            return COMPLETED
        if phase == COMPLETED:
            return RUNNING if ready >= min_member > 0 else PENDING
    if phase in ADMITTED_PHASES and running > 0 and ready < min_member:
        return UNKNOWN
    if phase == INQUEUE and running + succeeded >= min_member:
        return RUNNING
    if phase == UNKNOWN:
        return RUNNING if ready >= min_member else PENDING
    return phase


def _group_status(
    group: PodGroupView,
    pods: Sequence[PodView],
    admitted_now: bool,
    refusal: str | None = None,
    now: str = "",
    bound_now: frozenset[str] = frozenset(),
) -> PodGroupStatus:
    live = [p for p in pods if not p.terminating]
    running = sum(p.phase == RUNNING for p in live)
    succeeded = sum(p.phase == "Succeeded" for p in live)
    failed = sum(p.phase == "Failed" for p in live)
    ready = sum(1 for p in live if p.phase != "Failed" and (p.node_name or p.name in bound_now))
    # Volcano: the scheduled members (placed, failed or succeeded) reach minMember and all of
    # them finished; a member still waiting to be placed keeps the gang from completing here.
    completed = bool(live) and all(p.phase in FINISHED_PHASES for p in live)
    completed = completed and sum(1 for p in live if p.node_name) >= max(group.min_member, 1)
    phase = gang_phase(
        group.phase,
        admitted_now,
        group.min_member,
        running,
        succeeded,
        ready,
        completed=completed,
    )
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


def _broken(group: PodGroupView, pods: Sequence[PodView], bound_now: frozenset[str]) -> bool:
    """An admitted gang that still runs but has fewer than minMember members ready."""
    if group.phase not in ADMITTED_PHASES:
        return False
    live = [p for p in pods if not p.terminating]
    running = sum(p.phase == RUNNING for p in live)
    ready = sum(1 for p in live if p.phase != "Failed" and (p.node_name or p.name in bound_now))
    return running > 0 and ready < group.min_member


def _histogram(counts: Mapping[str, int]) -> str:
    """`2 Pending, 3 minAvailable`: count and name, sorted as text (as Volcano sorts them)."""
    return ", ".join(sorted(f"{count} {name}" for name, count in counts.items() if count))


def _gang_summary(
    group: PodGroupView,
    pods: Sequence[PodView],
    fitting: set[str],
    origin: tuple[PodView, str] | None = None,
) -> str:
    """Volcano's gang message: how many tasks short of minAvailable the gang is, its tasks per
    status, why each pending one waits, and the first pod's fit error."""
    ready_statuses = ("Bound", RUNNING, "Succeeded")
    ready = sum(1 for p in pods if p.task_status in ready_statuses)
    statuses = Counter(p.task_status for p in pods)
    statuses["minAvailable"] = group.min_member
    pending = Counter(
        SCHEDULABLE if p.name in fitting else UNSCHEDULABLE
        for p in pods
        if p.task_status == PENDING
    )
    unready = max(group.min_member - ready - len(fitting), 0)
    message = (
        f"{unready}/{len(pods)} tasks in gang unschedulable: "
        f"pod group is not ready, {_histogram(statuses)}"
    )
    if pending:
        message += f"; {PENDING}: {_histogram(pending)}"
    if origin is not None:
        pod, why = origin
        message += f". Origin reason is {pod.name}: {why}"
    return message


def _failures(
    pods: Iterable[PodView], reason: str, message: str | Mapping[str, str]
) -> list[PodSchedulingFailure]:
    """The PodScheduled condition to write for each pod whose stored one says something else
    (`message` is one for all, or per pod name)."""
    failures = []
    for pod in pods:
        text = message if isinstance(message, str) else message[pod.name]
        failure = PodSchedulingFailure(pod.namespace, pod.name, pod.uid, reason, text)
        if pod.scheduled is None or not pod.scheduled.same(failure.condition()):
            failures.append(failure)
    return failures


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
    capacity = _Capacity.of(ordered_nodes, pods)

    members: dict[tuple[str, str], list[PodView]] = {}
    for pod in pods:
        if pod.group:
            members.setdefault((pod.namespace, pod.group), []).append(pod)

    queue_map = None if queues is None else {q.name: q for q in queues}
    admitted, refused = _admissions(
        ordered_groups, members, ordered_nodes, capacity.free, queue_map
    )
    admitted_set = set(admitted)
    groups = {(g.namespace, g.name): g for g in ordered_groups}
    # Volcano's SchedulingGatesQueueAdmission: a gated pod waits, never Unschedulable, until its
    # queue takes its gang; then the gate goes and it is placed like any other.
    ungate = tuple(
        (p.namespace, p.name)
        for key, group in groups.items()
        if group.admitted or key in admitted_set
        for p in members.get(key, ())
        if p.queue_gated and p.scheduler_name == scheduler_name and not p.terminating
    )

    # Units of placement, oldest first: a whole gang, or a single pod.
    units: list[tuple[str, int, list[PodView], tuple[str, str] | None]] = []
    failures: list[PodSchedulingFailure] = []
    for key, group in groups.items():
        waiting = [
            p for p in members.get(key, ()) if p.waiting and p.scheduler_name == scheduler_name
        ]
        if not waiting:
            continue
        if group.admitted or key in admitted_set:
            already = sum(1 for p in members.get(key, ()) if p.node_name and p.phase != "Failed")
            waiting.sort(key=lambda p: (p.created, natural_key(p.name)))
            units.append((group.created, max(group.min_member - already, 1), waiting, key))
        else:
            failures += _failures(waiting, UNSCHEDULABLE, _gang_summary(group, members[key], set()))
    for pod in pods:
        if pod.waiting and pod.scheduler_name == scheduler_name and not pod.group:
            units.append((pod.created, 1, [pod], None))
    units.sort(key=lambda unit: unit[0])

    bindings: list[Binding] = []
    for _, needed, candidates, gang_key in units:
        if len(candidates) < needed:
            continue  # a gang whose pods are still being created waits for them, quietly
        trial = capacity.copy()
        placed, unfit = _place(candidates, ordered_nodes, trial)
        failures += _failures(
            [pod for pod, _ in unfit], UNSCHEDULABLE, {pod.name: why for pod, why in unfit}
        )
        if len(placed) >= needed:
            capacity = trial
            bindings.extend(placed)
        elif gang_key is not None:
            # Volcano keeps none of a gang's allocations when fewer than minMember fit.
            fitting = {b.pod: b.node for b in placed}
            too_large = (pod_beyond_every_node(pod, ordered_nodes) for pod, _ in unfit)
            refused[gang_key] = next(
                (m for m in too_large if m is not None),
                _gang_summary(groups[gang_key], members[gang_key], set(fitting), unfit[0]),
            )
            failures += _failures(
                [pod for pod in candidates if pod.name in fitting],
                SCHEDULABLE,
                {
                    pod: f"Pod {binding.namespace}/{pod} can possibly be assigned to "
                    f"{binding.node}, once minAvailable is satisfied"
                    for binding in placed
                    for pod in (binding.pod,)
                },
            )

    statuses: list[PodGroupStatus] = []
    changed: list[PodGroupStatus] = []
    events: list[PodGroupEvent] = []
    bound_now = frozenset(b.pod for b in bindings)
    for key, group in groups.items():
        gang = members.get(key, ())
        if key not in refused and _broken(group, gang, bound_now):
            # Running members, too few ready and nothing placed for the rest: Volcano's gang
            # plugin marks it unschedulable, which makes the phase Unknown.
            bound = {p.name for p in gang if p.name in bound_now}
            refused[key] = _gang_summary(group, gang, bound)
        status = _group_status(group, gang, key in admitted_set, refused.get(key), now, bound_now)
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
        unschedulable_pods=tuple(failures),
        ungate=ungate,
    )
