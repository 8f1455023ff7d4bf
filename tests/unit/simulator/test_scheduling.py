"""The gang scheduler's admission and placement decisions, one rule per case."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from localcluster.simulator.predicates import Requirement, SelectorTerm, Taint, Toleration
from localcluster.simulator.resources import parse_resources, pod_requests
from localcluster.simulator.scheduling import (
    Binding,
    Condition,
    NodeView,
    PodGroupEvent,
    PodGroupStatus,
    PodGroupView,
    PodSchedulingFailure,
    PodView,
    QueueView,
    gang_phase,
    node_view,
    pod_view,
    podgroup_view,
    queue_view,
    schedule,
)


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    *,
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
) -> NodeView:
    return NodeView(
        name,
        labels=labels or {},
        taints=taints,
        unschedulable=unschedulable,
        allocatable=parse_resources({"cpu": cpu, "memory": memory, "pods": "110", **(extra or {})}),
    )


def pod(
    name: str,
    cpu: str = "1",
    *,
    group: str = "",
    on: str = "",
    phase: str = "Pending",
    scheduler: str = "volcano",
    created: str = "2026-01-01T00:00:00Z",
    selector: dict[str, str] | None = None,
    terms: tuple[SelectorTerm, ...] | None = None,
    tolerations: tuple[Toleration, ...] = (),
    gated: bool = False,
    extra: dict[str, str] | None = None,
) -> PodView:
    return PodView(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        requests={**parse_resources({"cpu": cpu, **(extra or {})}), "pods": Decimal(1)},
        node_selector=selector or {},
        required_terms=terms,
        tolerations=tolerations,
        node_name=on,
        phase=phase,
        scheduler_name=scheduler,
        group=group,
        gated=gated,
        created=created,
    )


def gang(
    name: str,
    min_member: int,
    cpu: str = "0",
    *,
    phase: str = "Inqueue",
    created: str = "2026-01-01T00:00:00Z",
) -> PodGroupView:
    return PodGroupView(
        namespace="ns",
        name=name,
        min_member=min_member,
        min_resources=parse_resources({"cpu": cpu}),
        phase=phase,
        created=created,
    )


def bound(decisions_bind: tuple[Binding, ...]) -> dict[str, str]:
    return {b.pod: b.node for b in decisions_bind}


NOT_READY = Taint("node.kubernetes.io/not-ready", "NoSchedule")

ADMISSION_CASES = [
    pytest.param(
        [node("n1", cpu="4")],
        [],
        [gang("pg", 2, cpu="3", phase="Pending")],
        [("ns", "pg")],
        id="pending group admitted when free capacity covers minResources",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [],
        [gang("pg", 2, cpu="5", phase="Pending")],
        [],
        id="pending group waits when minResources exceed free capacity",
    ),
    pytest.param(
        [node("n1", cpu="2"), node("n2", cpu="2")],
        [],
        [gang("pg", 2, cpu="4", phase="")],
        [("ns", "pg")],
        id="group without status counts as pending; capacity is summed over nodes",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("busy", cpu="3", on="n1", phase="Running")],
        [gang("pg", 1, cpu="2", phase="Pending")],
        [],
        id="requests of bound running pods are not free",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("done", cpu="3", on="n1", phase="Succeeded")],
        [gang("pg", 1, cpu="2", phase="Pending")],
        [("ns", "pg")],
        id="finished pods free their requests",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [],
        [
            gang("young", 1, cpu="3", phase="Pending", created="2026-01-01T00:00:09Z"),
            gang("old", 1, cpu="3", phase="Pending", created="2026-01-01T00:00:01Z"),
        ],
        [("ns", "old")],
        id="oldest group first; the next one does not fit what is left",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [],
        [gang("admitted", 1, cpu="3"), gang("next", 1, cpu="2", phase="Pending")],
        [],
        id="an inqueue group's unplaced minResources stay reserved",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [],
        [gang("empty", 0, phase="Pending")],
        [("ns", "empty")],
        id="no minResources means nothing to wait for",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [],
        [PodGroupView("ns", "gpu", 1, parse_resources({"nvidia.com/gpu": "1"}), phase="Pending")],
        [],
        id="a resource no node has is never available",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "groups", "admitted"), ADMISSION_CASES)
def test_admission(
    nodes: list[NodeView],
    pods: list[PodView],
    groups: list[PodGroupView],
    admitted: list[tuple[str, str]],
) -> None:
    assert list(schedule(nodes, pods, groups).admit) == admitted


PLACEMENT_CASES = [
    pytest.param(
        [node("n1", cpu="2"), node("n2", cpu="2")],
        [pod("a", group="pg"), pod("b", group="pg"), pod("c", group="pg")],
        [gang("pg", 3)],
        {"a": "n1", "b": "n1", "c": "n2"},
        id="gang placed first-fit over nodes in name order",
    ),
    pytest.param(
        [node("n1", cpu="2")],
        [pod("a", group="pg"), pod("b", group="pg"), pod("c", group="pg")],
        [gang("pg", 3)],
        {},
        id="gang that does not fit at once is not placed at all",
    ),
    pytest.param(
        [node("n1", cpu="2")],
        [pod("a", group="pg"), pod("b", group="pg"), pod("c", group="pg")],
        [gang("pg", 2)],
        {"a": "n1", "b": "n1"},
        id="minMember placeable: as many as fit are bound",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("a", group="pg", on="n1", phase="Running"), pod("b", group="pg")],
        [gang("pg", 2, phase="Running")],
        {"b": "n1"},
        id="after the first placement pods are placed one by one",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("a", group="pg"), pod("b", group="pg")],
        [gang("pg", 2, phase="Pending", cpu="8")],
        {},
        id="pods of a group that is not admitted wait",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("a", group="missing")],
        [],
        {},
        id="pods whose group does not exist wait",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("a", group="pg"), pod("b", group="pg")],
        [gang("pg", 2, phase="Pending", cpu="2")],
        {"a": "n1", "b": "n1"},
        id="a group admitted in this round is placed in the same round",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("a", scheduler="default-scheduler"), pod("b", scheduler="")],
        [],
        {},
        id="default-scheduler pods are left to kube-scheduler",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("k", cpu="3", scheduler="default-scheduler", on="n1"), pod("a", cpu="2")],
        [],
        {},
        id="what kube-scheduler bound counts against the node",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [pod("a", scheduler="someone-else")],
        [],
        {},
        id="pods of another scheduler are left alone",
    ),
    pytest.param(
        [node("n10", cpu="1"), node("n2", cpu="1")],
        [pod("a")],
        [],
        {"a": "n2"},
        id="node names sort naturally (n2 before n10)",
    ),
    pytest.param(
        [
            node("n1", cpu="4", extra={"nvidia.com/gpu": "0"}),
            node("n2", cpu="4", extra={"nvidia.com/gpu": "2"}),
        ],
        [pod("a", group="pg", extra={"nvidia.com/gpu": "2"})],
        [gang("pg", 1)],
        {"a": "n2"},
        id="extended resources such as nvidia.com/gpu are fitted",
    ),
    pytest.param(
        [NodeView("n1", allocatable=parse_resources({"cpu": "4", "pods": "1"}))],
        [pod("a"), pod("b")],
        [],
        {"a": "n1"},
        id="every pod takes one of the node's pod slots",
    ),
    pytest.param(
        [node("n1", unschedulable=True), node("n2")],
        [pod("a")],
        [],
        {"a": "n2"},
        id="a cordoned node gets no pods",
    ),
    pytest.param(
        [node("n1", taints=(NOT_READY,)), node("n2")],
        [pod("a")],
        [],
        {"a": "n2"},
        id="a not-ready node (tainted by the node lifecycle controller) gets no pods",
    ),
    pytest.param(
        [node("n1", taints=(Taint("dedicated", "NoSchedule", "gpu"),))],
        [pod("a", tolerations=(Toleration("dedicated", "Equal", "gpu", "NoSchedule"),))],
        [],
        {"a": "n1"},
        id="a toleration lets a pod onto a tainted node",
    ),
    pytest.param(
        [node("n1"), node("n2", labels={"disk": "ssd"})],
        [pod("a", selector={"disk": "ssd"})],
        [],
        {"a": "n2"},
        id="nodeSelector picks the node",
    ),
    pytest.param(
        [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"})],
        [pod("a", terms=(SelectorTerm((Requirement("zone", "In", ("b",)),)),))],
        [],
        {"a": "n2"},
        id="required node affinity picks the node",
    ),
    pytest.param(
        [node("n1"), node("n2")],
        [pod("a", terms=(SelectorTerm((Requirement("zone", "In", ("nowhere",)),)),))],
        [],
        {},
        id="a required node affinity no node meets binds nothing",
    ),
    pytest.param(
        [node("n1"), node("n2")],
        [
            pod("a", group="pg"),
            pod("b", group="pg", selector={"gpu": "yes"}),
        ],
        [gang("pg", 2)],
        {},
        id="a gang member no node accepts keeps the whole gang waiting",
    ),
    pytest.param(
        [node("n1")],
        [pod("a", gated=True)],
        [],
        {},
        id="a pod with scheduling gates waits",
    ),
    pytest.param(
        [node("n1", cpu="4")],
        [
            pod("a", group="pg", on="n1", phase="Failed"),
            pod("b", group="pg"),
            pod("c", group="pg", cpu="8"),
        ],
        [gang("pg", 2, phase="Running")],
        {},
        id="failed pods do not count toward the gang",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "groups", "expected"), PLACEMENT_CASES)
def test_placement(
    nodes: list[NodeView],
    pods: list[PodView],
    groups: list[PodGroupView],
    expected: dict[str, str],
) -> None:
    assert bound(schedule(nodes, pods, groups).bind) == expected


def test_podgroup_becomes_running_once_min_member_pods_run() -> None:
    pods = [
        pod("a", group="pg", on="n1", phase="Running"),
        pod("b", group="pg", on="n1", phase="Succeeded"),
        pod("c", group="pg", on="n1", phase="Failed"),
    ]
    decisions = schedule([node("n1")], pods, [gang("pg", 2)])
    assert decisions.podgroup_status == (PodGroupStatus("ns", "pg", "Running", 1, 1, 1),)


def test_podgroup_stays_inqueue_until_enough_pods_run() -> None:
    pods = [pod("a", group="pg", on="n1", phase="Running"), pod("b", group="pg", on="n1")]
    decisions = schedule([node("n1")], pods, [gang("pg", 2)])
    assert decisions.podgroup_status == (PodGroupStatus("ns", "pg", "Inqueue", 1, 0, 0),)


def test_unchanged_podgroup_status_is_not_rewritten() -> None:
    group = PodGroupView("ns", "pg", 1, {}, phase="Running", running=1)
    decisions = schedule([node("n1")], [pod("a", group="pg", on="n1", phase="Running")], [group])
    assert decisions.podgroup_status == ()


def test_pending_podgroup_without_status_is_marked_pending() -> None:
    decisions = schedule([node("n1", cpu="1")], [], [gang("pg", 1, cpu="2", phase="")])
    assert [(s.phase, s.running, s.succeeded, s.failed) for s in decisions.podgroup_status] == [
        ("Pending", 0, 0, 0)
    ]


REQUEST_CASES = [
    pytest.param(
        {"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
        {"cpu": Decimal("0.5"), "memory": Decimal(2**30)},
        id="container requests",
    ),
    pytest.param(
        {"containers": [{"resources": {"limits": {"cpu": "2"}}}]},
        {"cpu": Decimal(2)},
        id="limits only: requests default to limits",
    ),
    pytest.param(
        {
            "containers": [
                {"resources": {"requests": {"cpu": "1"}}},
                {"resources": {"requests": {"cpu": "1"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "3"}}}],
        },
        {"cpu": Decimal(3)},
        id="the largest init container wins over the sum of containers",
    ),
    pytest.param({"containers": [{"name": "c"}]}, {}, id="no requests"),
]


@pytest.mark.parametrize(("spec", "expected"), REQUEST_CASES)
def test_pod_requests(spec: dict[str, object], expected: dict[str, Decimal]) -> None:
    assert pod_requests(spec) == {**expected, "pods": Decimal(1)}


def test_quota_style_keys_are_normalised() -> None:
    assert parse_resources({"requests.cpu": "1", "limits.cpu": "2", "count/pods": "3"}) == {
        "cpu": Decimal(1)
    }


def test_volcano_min_resources_keys_count_once() -> None:
    """`cpu` and `requests.cpu` name the same amount in a PodGroup's minResources."""
    assert parse_resources(
        {"count/pods": "2", "pods": "2", "cpu": "2", "requests.cpu": "2", "limits.cpu": "4"}
    ) == {"cpu": Decimal(2), "pods": Decimal(2)}


def test_views_read_wire_objects() -> None:
    wire_node = {
        "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    assert node_view(wire_node).allocatable["cpu"] == Decimal(8)
    assert node_view(wire_node).labels == {"kubernetes.io/hostname": "node-1"}
    wire_pod = {
        "metadata": {
            "namespace": "ns",
            "name": "p",
            "annotations": {"scheduling.k8s.io/group-name": "pg"},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"schedulerName": "volcano", "containers": [], "nodeName": "node-1"},
        "status": {"phase": "Running"},
    }
    view = pod_view(wire_pod)
    assert (view.group, view.node_name, view.terminating, view.occupies_node) == (
        "pg",
        "node-1",
        True,
        True,
    )
    wire_group = {
        "metadata": {"namespace": "ns", "name": "pg"},
        "spec": {"minMember": 3, "minResources": {"cpu": "3"}},
    }
    assert podgroup_view(wire_group).phase == ""
    assert not podgroup_view(wire_group).admitted


# -- queues, conditions and events, as Volcano's scheduler writes them -------------------------

NOW = "2026-01-01T00:01:00Z"


def queue(name: str = "default", state: str = "Open", **spec: dict[str, str]) -> QueueView:
    return QueueView(
        name,
        state,
        capability=parse_resources(spec.get("capability")),
        deserved=parse_resources(spec.get("deserved")),
        status={"state": state} if state else {},
    )


def pending(name: str, cpu: str, queue_name: str = "default", **extra: str) -> PodGroupView:
    return PodGroupView(
        "ns",
        name,
        1,
        parse_resources({"cpu": cpu, **extra}),
        phase="Pending",
        queue=queue_name,
    )


QUEUE_CASES = [
    pytest.param([queue()], pending("pg", "1"), None, id="open queue admits"),
    pytest.param(
        [queue(state="Closed")],
        pending("pg", "1"),
        "queue default is Closed: it admits no new PodGroups",
        id="closed queue refuses",
    ),
    pytest.param(
        [queue(state="Closing")],
        pending("pg", "1"),
        "queue default is Closing: it admits no new PodGroups",
        id="closing queue refuses",
    ),
    pytest.param([queue(state="")], pending("pg", "1"), None, id="a queue without state is open"),
    pytest.param([], pending("pg", "1"), "queue default does not exist", id="missing queue"),
    pytest.param(
        [queue(capability={"cpu": "1"})],
        pending("pg", "2"),
        "insufficient cpu in queue default's capability: the gang needs 2, 1 left",
        id="capability is a hard limit",
    ),
    pytest.param(
        [queue(deserved={"cpu": "1"})],
        pending("pg", "2"),
        "insufficient cpu in queue default's deserved: the gang needs 2, 1 left",
        id="deserved caps the share",
    ),
    pytest.param(
        [queue(capability={"memory": "1Gi"})],
        pending("pg", "2"),
        None,
        id="a resource the capability does not name is not limited",
    ),
    pytest.param(
        [queue()],
        pending("gpu", "1", **{"nvidia.com/gpu": "1"}),
        "the gang's pod requests nvidia.com/gpu 1 but no node has nvidia.com/gpu: "
        "no node can run it",
        id="a GPU job on a GPU-less cluster says why",
    ),
]


@pytest.mark.parametrize(("queues", "group", "refusal"), QUEUE_CASES)
def test_queue_rules_and_unschedulable_condition(
    queues: list[QueueView], group: PodGroupView, refusal: str | None
) -> None:
    decisions = schedule([node("n1")], [], [group], queues=queues, now=NOW)
    status = decisions.podgroup_status[0]
    if refusal is None:
        assert decisions.admit == (("ns", group.name),)
        assert status.conditions == (
            Condition("Scheduled", "True", "tasks in gang are ready to be scheduled", "", NOW),
        )
        assert decisions.events == ()
    else:
        assert decisions.admit == ()
        assert status.phase == "Pending"
        assert status.conditions == (
            Condition("Unschedulable", "True", "NotEnoughResources", refusal, NOW),
        )
        assert decisions.events == (PodGroupEvent("ns", group.name, "Unschedulable", refusal),)


def test_capability_counts_what_the_queue_already_admitted() -> None:
    admitted = replace(gang("old", 1, cpu="2"), queue="default")
    decisions = schedule(
        [node("n1", cpu="8")],
        [],
        [admitted, pending("new", "2")],
        queues=[queue(capability={"cpu": "3"})],
        now=NOW,
    )
    assert decisions.admit == ()


def test_unchanged_refusal_is_neither_rewritten_nor_re_announced() -> None:
    first = schedule([node("n1", cpu="1")], [], [pending("pg", "2")], queues=[queue()], now=NOW)
    group = replace(pending("pg", "2"), conditions=first.podgroup_status[0].conditions)
    again = schedule([node("n1", cpu="1")], [], [group], queues=[queue()], now="later")
    assert again.podgroup_status == ()
    assert again.events == ()


def test_admission_after_a_refusal_turns_unschedulable_false_and_adds_scheduled() -> None:
    refused = Condition("Unschedulable", "True", "NotEnoughResources", "x", "t0")
    group = replace(pending("pg", "1"), conditions=(refused,))
    status = schedule([node("n1")], [], [group], queues=[queue()], now=NOW).podgroup_status[0]
    assert status.phase == "Inqueue"
    assert status.conditions == (
        Condition("Unschedulable", "False", "", "", NOW),
        Condition("Scheduled", "True", "tasks in gang are ready to be scheduled", "", NOW),
    )
    assert status.as_status()["conditions"][1] == {
        "type": "Scheduled",
        "status": "True",
        "reason": "tasks in gang are ready to be scheduled",
        "lastTransitionTime": NOW,
    }


def test_a_gang_that_cannot_be_placed_is_unschedulable() -> None:
    group = gang("pg", 2, phase="Inqueue")
    pods = [pod("a", cpu="3", group="pg"), pod("b", cpu="3", group="pg")]
    decisions = schedule([node("n1", cpu="4")], pods, [group], queues=[queue()], now=NOW)
    assert decisions.bind == ()
    (condition,) = decisions.podgroup_status[0].conditions
    assert (condition.type, condition.reason) == ("Unschedulable", "NotEnoughResources")
    assert condition.message.startswith("1/2 tasks in gang unschedulable")


def test_queue_status_counts_podgroups_per_phase_and_allocated() -> None:
    groups = [
        replace(gang("run", 1, phase="Running"), queue="default"),
        replace(gang("inq", 5, phase="Inqueue"), queue="default"),
        pending("wait", "99"),
        replace(gang("other", 1, phase="Running"), queue="q2"),
    ]
    pods = [
        pod("r0", cpu="1500m", group="run", on="n1", phase="Running"),
        pod("done", cpu="1", group="run", on="n1", phase="Succeeded"),
        pod("o0", cpu="1", group="other", on="n1", phase="Running"),
    ]
    decisions = schedule(
        [node("n1", cpu="100")], pods, groups, queues=[queue(state=""), queue("q2")], now=NOW
    )
    statuses = {q.name: q.status for q in decisions.queue_status}
    assert statuses["default"] == {
        "state": "Open",
        "allocated": {"cpu": "1500m", "pods": "1"},
        "pending": 1,
        "running": 1,
        "inqueue": 1,
        "unknown": 0,
        "completed": 0,
    }
    assert statuses["q2"]["allocated"] == {"cpu": "1", "pods": "1"}


def test_unchanged_queue_status_is_not_rewritten() -> None:
    current = {
        "state": "Open",
        "allocated": {},
        **dict.fromkeys(("pending", "running", "inqueue", "unknown", "completed"), 0),
    }
    decisions = schedule([node("n1")], [], [], queues=[replace(queue(), status=current)])
    assert decisions.queue_status == ()


def test_without_known_queues_no_queue_rule_applies() -> None:
    decisions = schedule([node("n1")], [], [pending("pg", "1", "nowhere")], queues=None)
    assert decisions.admit == (("ns", "pg"),)
    assert decisions.queue_status == ()


def test_queue_and_condition_views_read_wire_objects() -> None:
    view = queue_view(
        {
            "metadata": {"name": "q"},
            "spec": {"capability": {"cpu": "2"}, "deserved": {"memory": "1Gi"}},
            "status": {"state": "Closed"},
        }
    )
    assert (view.name, view.state, view.capability, view.deserved) == (
        "q",
        "Closed",
        {"cpu": Decimal(2)},
        {"memory": Decimal(2**30)},
    )
    group = podgroup_view(
        {
            "metadata": {"namespace": "ns", "name": "pg"},
            "spec": {"queue": "q"},
            "status": {
                "conditions": [
                    {"type": "Unschedulable", "status": "True", "lastTransitionTime": "t"}
                ]
            },
        }
    )
    assert group.queue == "q"
    assert group.conditions == (Condition("Unschedulable", "True", "", "", "t"),)


# -- why a pod waits: PodScheduled conditions and the gang's message ----------------------------


def test_a_pod_no_node_accepts_says_why_in_kube_schedulers_words() -> None:
    nodes = [node("n1", taints=(NOT_READY,)), node("n2"), node("n3")]
    decisions = schedule(nodes, [pod("a", selector={"disk": "ssd"})], [])
    assert decisions.bind == ()
    assert decisions.unschedulable_pods == (
        PodSchedulingFailure(
            "ns",
            "a",
            "uid-a",
            "Unschedulable",
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
            "2 node(s) didn't match Pod's node affinity/selector.",
        ),
    )


def test_a_reason_already_on_the_pod_is_not_written_again() -> None:
    message = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    stored = Condition("PodScheduled", "False", "Unschedulable", message, "t0")
    waiting = replace(pod("a", selector={"disk": "ssd"}), scheduled=stored)
    assert schedule([node("n1")], [waiting], []).unschedulable_pods == ()
    moved = replace(waiting, scheduled=replace(stored, message="older reason"))
    assert len(schedule([node("n1")], [moved], []).unschedulable_pods) == 1


def test_a_gang_short_of_capacity_says_what_fits_and_what_does_not() -> None:
    pods = [pod("a", cpu="3", group="pg"), pod("b", cpu="3", group="pg")]
    decisions = schedule([node("n1", cpu="4")], pods, [gang("pg", 2)], queues=[queue()], now=NOW)
    assert decisions.bind == ()
    (condition,) = decisions.podgroup_status[0].conditions
    assert condition.message == (
        "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 1 Schedulable, 1 Unschedulable. "
        "Origin reason is b: 0/1 nodes are available: 1 Insufficient cpu."
    )
    assert decisions.events == (PodGroupEvent("ns", "pg", "Unschedulable", condition.message),)
    assert decisions.unschedulable_pods == (
        PodSchedulingFailure(
            "ns", "b", "uid-b", "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."
        ),
        PodSchedulingFailure(
            "ns",
            "a",
            "uid-a",
            "Schedulable",
            "Pod ns/a can possibly be assigned to n1, once minAvailable is satisfied",
        ),
    )


def test_the_pods_of_a_gang_not_admitted_wait_with_the_gang() -> None:
    pods = [pod("a", cpu="3", group="pg"), pod("b", cpu="3", group="pg")]
    group = PodGroupView("ns", "pg", 2, parse_resources({"cpu": "6"}), phase="Pending")
    decisions = schedule([node("n1", cpu="4")], pods, [group], queues=[queue()], now=NOW)
    assert decisions.admit == ()
    summary = (
        "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 2 Unschedulable"
    )
    assert [(f.name, f.reason, f.message) for f in decisions.unschedulable_pods] == [
        ("a", "Unschedulable", summary),
        ("b", "Unschedulable", summary),
    ]


def test_a_gang_whose_pods_are_still_coming_waits_quietly() -> None:
    pods = [pod("a", group="pg"), pod("b", group="pg")]
    decisions = schedule([node("n1")], pods, [gang("pg", 3)], queues=[queue()], now=NOW)
    assert decisions.bind == ()
    assert decisions.unschedulable_pods == ()
    assert all(not s.conditions for s in decisions.podgroup_status)


def test_admission_counts_tainted_nodes_and_placement_says_why_they_refuse() -> None:
    """Volcano's enqueue counts every node; the taint only shows when the pods are placed."""
    tainted = [node("n1", taints=(NOT_READY,))]
    group = pending("pg", "2")
    decisions = schedule(
        tainted, [pod("a", cpu="2", group="pg")], [group], queues=[queue()], now=NOW
    )
    assert decisions.admit == (("ns", "pg"),)
    assert decisions.bind == ()
    (status,) = decisions.podgroup_status
    unschedulable = next(c for c in status.conditions if c.type == "Unschedulable")
    assert unschedulable.message.endswith(
        "Origin reason is a: 0/1 nodes are available: 1 node(s) had untolerated taint(s)."
    )


# -- a pod larger than every node: more capacity of the same shape would not help ----------------


def group_of(min_member: int, phase: str = "Pending", **resources: str) -> PodGroupView:
    return PodGroupView("ns", "pg", min_member, parse_resources(resources), phase=phase)


BEYOND_EVERY_NODE_CASES = [
    pytest.param(
        [node("n1", cpu="8"), node("n2", cpu="8"), node("n3", cpu="8")],
        [],
        group_of(2, cpu="32"),
        "the gang's 2 pods request cpu 32 in all, one of them at least 16, "
        "but the largest node has 8 allocatable: no node can run it",
        id="not admitted, no pods yet: minResources over minMember is more than any node has",
    ),
    pytest.param(
        [node("n1", cpu="4"), node("n2", cpu="24")],
        [],
        group_of(1, cpu="32"),
        "the gang's pod requests cpu 32 but the largest node has 24 allocatable: "
        "no node can run it",
        id="not admitted, one pod: the largest node, not the cluster's total, is compared",
    ),
    pytest.param(
        [node("n1", cpu="8"), node("n2", cpu="8")],
        [],
        group_of(3, cpu="25"),
        "the gang's 3 pods request cpu 25 in all, one of them at least 8334m, "
        "but the largest node has 8 allocatable: no node can run it",
        id="an average that does not divide evenly is rounded up to a millicore",
    ),
    pytest.param(
        [node("n1", cpu="64", memory="32Gi")],
        [],
        group_of(1, cpu="1", memory="64Gi"),
        "the gang's pod requests memory 64Gi but the largest node has 32Gi allocatable: "
        "no node can run it",
        id="memory is shown in binary units",
    ),
    pytest.param(
        [node("n1", cpu="8"), node("n2", cpu="8"), node("n3", cpu="8")],
        [],
        group_of(4, cpu="30"),
        "insufficient cpu in the cluster: the gang needs 30, 24 left",
        id="pods that each fit a node: the cluster's total is what is short",
    ),
    pytest.param(
        [],
        [],
        group_of(1, cpu="1"),
        "insufficient cpu in the cluster: the gang needs 1, 0 left",
        id="no nodes at all: nothing to compare a pod with",
    ),
    pytest.param(
        [node("n1", cpu="8"), node("n2", cpu="8"), node("n3", cpu="8")],
        [pod("a", cpu="1", group="pg"), pod("b", cpu="32", group="pg")],
        group_of(2, cpu="33"),
        "pod b requests cpu 32 but the largest node has 8 allocatable: no node can run it",
        id="not admitted, pods already there (plain pods' groups): the pod is named",
    ),
    pytest.param(
        [node("n1", cpu="8"), node("n2", cpu="24")],
        [pod("w-0", cpu="32", group="pg")],
        group_of(1, phase="Inqueue", cpu="32"),
        "pod w-0 requests cpu 32 but the largest node has 24 allocatable: no node can run it",
        id="admitted on the cluster's total, then placed: no node takes the pod",
    ),
    pytest.param(
        [node("n1", cpu="8", memory="4Gi"), node("n2", cpu="2", memory="32Gi")],
        [pod("w-0", cpu="6", group="pg", extra={"memory": "16Gi"})],
        group_of(1, phase="Inqueue", cpu="6"),
        "pod w-0 requests cpu 6, memory 16Gi but no node has all of it allocatable: "
        "no node can run it",
        id="each resource fits some node, but no node has them all",
    ),
    pytest.param(
        [node("n1", cpu="4"), node("n2", cpu="8", taints=(NOT_READY,))],
        [pod("w-0", cpu="6", group="pg")],
        group_of(1, phase="Inqueue", cpu="6"),
        "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; "
        "Pending: 1 Unschedulable. Origin reason is w-0: 0/2 nodes are available: "
        "1 Insufficient cpu, 1 node(s) had untolerated taint(s).",
        id="a node large enough but tainted: Volcano's summary, not 'no node'",
    ),
    pytest.param(
        [node("n1", cpu="8")],
        [pod("busy", cpu="4", on="n1", phase="Running"), pod("w-0", cpu="6", group="pg")],
        group_of(1, phase="Inqueue", cpu="6"),
        "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; "
        "Pending: 1 Unschedulable. Origin reason is w-0: 0/1 nodes are available: "
        "1 Insufficient cpu.",
        id="a pod an empty node would take waits for room: Volcano's summary",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "group", "message"), BEYOND_EVERY_NODE_CASES)
def test_a_pod_larger_than_every_node_is_named_as_the_cause(
    nodes: list[NodeView], pods: list[PodView], group: PodGroupView, message: str
) -> None:
    decisions = schedule(nodes, pods, [group], queues=[queue()], now=NOW)
    assert decisions.admit == ()
    assert decisions.bind == ()
    (status,) = decisions.podgroup_status
    (condition,) = status.conditions
    assert condition == Condition("Unschedulable", "True", "NotEnoughResources", message, NOW)
    assert decisions.events == (PodGroupEvent("ns", "pg", "Unschedulable", message),)


def test_a_pod_larger_than_every_node_keeps_kube_schedulers_words_on_the_pod() -> None:
    """The pod's own PodScheduled condition stays kube-scheduler's FitError, word for word."""
    nodes = [node("n1", cpu="8"), node("n2", cpu="24")]
    decisions = schedule(
        nodes, [pod("w-0", cpu="32", group="pg")], [group_of(1, phase="Inqueue", cpu="32")]
    )
    assert [(f.name, f.message) for f in decisions.unschedulable_pods] == [
        ("w-0", "0/2 nodes are available: 2 Insufficient cpu.")
    ]


def test_pod_view_reads_placement_rules_gates_and_the_scheduled_condition() -> None:
    view = pod_view(
        {
            "metadata": {"namespace": "ns", "name": "p", "uid": "u1"},
            "spec": {
                "schedulerName": "volcano",
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [{"operator": "Exists"}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "z", "operator": "Exists"}]}
                            ]
                        }
                    }
                },
                "schedulingGates": [{"name": "wait"}],
                "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}],
            },
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ],
            },
        }
    )
    assert (view.uid, view.node_selector, view.gated) == ("u1", {"disk": "ssd"}, True)
    assert not view.waiting
    assert view.tolerations == (Toleration("", "Exists"),)
    assert view.required_terms == (SelectorTerm((Requirement("z", "Exists"),)),)
    assert view.scheduled == Condition("PodScheduled", "False", "Unschedulable")
    assert len(view.host_ports) == 1


def test_node_view_reads_taints_and_the_cordon() -> None:
    view = node_view(
        {
            "metadata": {"name": "n1"},
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}],
            },
            "status": {"allocatable": {"cpu": "1"}},
        }
    )
    assert view.unschedulable
    assert view.taints == (NOT_READY,)


GANG_PHASES = [
    # current, admitted now, minMember, running, succeeded, ready -> phase
    pytest.param("", False, 2, 0, 0, 0, "Pending", id="no status yet: Pending"),
    pytest.param("Pending", True, 2, 0, 0, 0, "Inqueue", id="admitted: Inqueue"),
    pytest.param("Inqueue", False, 2, 1, 0, 2, "Inqueue", id="bound but not all running"),
    pytest.param("Inqueue", False, 2, 1, 1, 2, "Running", id="minMember run or succeeded"),
    pytest.param("Running", False, 4, 2, 0, 2, "Unknown", id="half of a running gang gone"),
    pytest.param("Inqueue", False, 3, 2, 0, 2, "Unknown", id="running but a member unplaced"),
    pytest.param("Running", False, 4, 0, 0, 0, "Running", id="nothing runs: not Unknown"),
    pytest.param("Unknown", False, 4, 2, 0, 2, "Unknown", id="still short: stays Unknown"),
    pytest.param("Unknown", False, 4, 2, 0, 4, "Running", id="replacements placed: Running"),
    pytest.param("Unknown", False, 4, 0, 0, 0, "Pending", id="none runs any more: Pending"),
    pytest.param("Running", False, 2, 2, 0, 2, "Running", id="healthy gang stays Running"),
    pytest.param("Pending", False, 2, 1, 0, 1, "Pending", id="not admitted: never Unknown"),
]


@pytest.mark.parametrize(
    ("current", "admitted_now", "min_member", "running", "succeeded", "ready", "expected"),
    GANG_PHASES,
)
def test_gang_phase(
    current: str,
    admitted_now: bool,
    min_member: int,
    running: int,
    succeeded: int,
    ready: int,
    expected: str,
) -> None:
    assert gang_phase(current, admitted_now, min_member, running, succeeded, ready) == expected


def test_a_running_gang_whose_half_is_gone_while_nodes_are_full_is_unknown() -> None:
    """Volcano's jobseq suite: half of a running gang deleted, the replacements fit nowhere (the
    node is full with another job's pods): Unknown, Unschedulable with the gang's message, a
    Warning event, and the queue counts it as unknown."""
    group = replace(gang("pg", 4, phase="Running"), running=4)
    pods = [
        pod("a", cpu="1", group="pg", on="n1", phase="Running"),
        pod("b", cpu="1", group="pg", on="n1", phase="Running"),
        pod("c", cpu="1", group="pg"),
        pod("d", cpu="1", group="pg"),
        pod("busy", cpu="2", on="n1", phase="Running", scheduler="default-scheduler"),
    ]
    decisions = schedule([node("n1", cpu="4")], pods, [group], queues=[queue()], now=NOW)
    assert decisions.bind == ()
    (status,) = decisions.podgroup_status
    assert (status.phase, status.running) == ("Unknown", 2)
    (condition,) = status.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "Unschedulable",
        "True",
        "NotEnoughResources",
    )
    assert condition.message.startswith("2/4 tasks in gang unschedulable: pod group is not ready")
    assert decisions.events == (PodGroupEvent("ns", "pg", "Unschedulable", condition.message),)
    (queue_status,) = decisions.queue_status
    assert (queue_status.status["unknown"], queue_status.status["running"]) == (1, 0)


def test_a_running_gang_whose_members_are_not_recreated_yet_is_unknown() -> None:
    group = replace(gang("pg", 2, phase="Running"), running=2)
    pods = [pod("a", group="pg", on="n1", phase="Running")]
    decisions = schedule([node("n1")], pods, [group], now=NOW)
    (status,) = decisions.podgroup_status
    assert status.phase == "Unknown"
    assert status.conditions[0].message.startswith("1/1 tasks in gang unschedulable")


def test_an_unknown_gang_whose_replacements_fit_is_running_again() -> None:
    unschedulable = Condition("Unschedulable", "True", "NotEnoughResources", "1/2 …", NOW)
    group = replace(gang("pg", 2, phase="Unknown"), running=1, conditions=(unschedulable,))
    pods = [pod("a", group="pg", on="n1", phase="Running"), pod("b", group="pg")]
    decisions = schedule([node("n1")], pods, [group], now="2026-01-01T00:01:00Z")
    assert bound(decisions.bind) == {"b": "n1"}
    (status,) = decisions.podgroup_status
    assert status.phase == "Running"
    assert [(c.type, c.status) for c in status.conditions] == [
        ("Unschedulable", "False"),
        ("Scheduled", "True"),
    ]
    assert decisions.events == ()


def test_a_running_gang_whose_replacement_meets_tainted_nodes_is_unknown_and_says_why() -> None:
    """Volcano's jobseq suite taints every node, then deletes a pod of a running gang."""
    taint = Taint("unschedulable-taint-key", "NoSchedule", "unschedulable-taint-val")
    nodes = [node("n1", taints=(taint,)), node("n2", taints=(taint,))]
    group = replace(gang("pg", 2, phase="Running"), running=2)
    pods = [pod("a", group="pg", on="n1", phase="Running"), pod("b", group="pg")]
    decisions = schedule(nodes, pods, [group], queues=[queue()], now=NOW)
    assert decisions.bind == ()
    (status,) = decisions.podgroup_status
    assert status.phase == "Unknown"
    message = status.conditions[0].message
    assert message.startswith("1/2 tasks in gang unschedulable")
    assert "2 node(s) had untolerated taint(s)" in message


@pytest.mark.parametrize(
    ("phases", "placed", "current", "expected"),
    [
        (["Succeeded", "Succeeded"], 2, "Running", "Completed"),
        (["Succeeded", "Failed"], 2, "Running", "Completed"),  # failed members finished too
        (["Succeeded", "Running"], 2, "Running", "Running"),
        (["Succeeded", "Pending"], 1, "Running", "Running"),  # one still waits to be placed
        (["Succeeded", "Succeeded"], 2, "Completed", "Completed"),
        # A completed gang given new members (a restarted job) runs again.
        (["Running", "Running"], 2, "Completed", "Running"),
    ],
)
def test_a_gang_whose_members_all_finished_is_completed(
    phases: list[str], placed: int, current: str, expected: str
) -> None:
    """Volcano's scheduler marks a PodGroup Completed once its scheduled members (minMember at
    least) have all succeeded or failed; the queue counts it as completed."""
    group = replace(gang("pg", 2, phase=current), running=2)
    pods = [
        pod(f"p{i}", group="pg", on="n1" if i < placed else "", phase=phase)
        for i, phase in enumerate(phases)
    ]
    decisions = schedule([node("n1")], pods, [group], queues=[queue()], now=NOW)
    statuses = {s.name: s.phase for s in decisions.podgroup_status}
    assert statuses.get("pg", current) == expected
    if expected == "Completed":
        (queue_status,) = decisions.queue_status
        assert queue_status.status["completed"] == 1


def queue_gated(name: str, group: str, **fields: object) -> PodView:
    return replace(pod(name, group=group, gated=True), queue_gated=True, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("group", "pods", "queues", "lifted"),
    [
        pytest.param(
            pending("pg", "1"),
            [queue_gated("a", "pg")],
            [queue()],
            (("ns", "a"),),
            id="admitted-now",
        ),
        pytest.param(
            gang("pg", 1, cpu="1"),
            [queue_gated("a", "pg")],
            [queue()],
            (("ns", "a"),),
            id="in-queue",
        ),
        pytest.param(
            pending("pg", "2"),
            [queue_gated("a", "pg")],
            [queue(capability={"cpu": "1"})],
            (),
            id="no-room-in-the-queue",
        ),
        pytest.param(
            gang("pg", 1, cpu="1"),
            [replace(pod("a", group="pg", gated=True), queue_gated=False)],
            [queue()],
            (),
            id="other-gates-stay",
        ),
        pytest.param(
            gang("pg", 1, cpu="1"),
            [queue_gated("a", "pg", scheduler_name="default-scheduler")],
            [queue()],
            (),
            id="another-schedulers-pod",
        ),
        pytest.param(
            gang("pg", 1, cpu="1"),
            [queue_gated("a", "pg", terminating=True)],
            [queue()],
            (),
            id="terminating",
        ),
    ],
)
def test_the_queue_gate_is_lifted_once_the_gang_is_in_its_queue(
    group: PodGroupView, pods: list[PodView], queues: list[QueueView], lifted: tuple[object, ...]
) -> None:
    decisions = schedule([node("n1", cpu="8")], pods, [group], queues=queues, now=NOW)
    assert decisions.ungate == lifted
    # A gated pod is never placed nor marked unschedulable in the round that lifts its gate.
    assert decisions.bind == () and decisions.unschedulable_pods == ()


@pytest.mark.parametrize(
    ("gates", "annotation", "queue_gated_"),
    [
        ([{"name": "scheduling.volcano.sh/queue-allocation-gate"}], "true", True),
        ([{"name": "scheduling.volcano.sh/queue-allocation-gate"}], None, False),
        (
            [{"name": "scheduling.volcano.sh/queue-allocation-gate"}, {"name": "other"}],
            "true",
            False,
        ),
        (None, "true", False),
    ],
)
def test_pod_view_reads_the_queue_gate(
    gates: list[dict[str, str]] | None, annotation: str | None, queue_gated_: bool
) -> None:
    metadata: dict[str, object] = {"namespace": "ns", "name": "p"}
    if annotation is not None:
        metadata["annotations"] = {"scheduling.volcano.sh/queue-allocation-gate": annotation}
    spec: dict[str, object] = {"containers": [{"name": "c"}]}
    if gates is not None:
        spec["schedulingGates"] = gates
    assert pod_view({"metadata": metadata, "spec": spec}).queue_gated is queue_gated_
