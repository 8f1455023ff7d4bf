"""The gang scheduler's admission and placement decisions, one rule per case."""

from __future__ import annotations

from decimal import Decimal

import pytest

from localcluster.simulator.resources import parse_resources, pod_requests
from localcluster.simulator.scheduling import (
    Binding,
    NodeView,
    PodGroupStatus,
    PodGroupView,
    PodView,
    node_view,
    pod_view,
    podgroup_view,
    schedule,
)


def node(name: str, cpu: str = "4", memory: str = "8Gi", **extra: str) -> NodeView:
    return NodeView(name, parse_resources({"cpu": cpu, "memory": memory, "pods": "110", **extra}))


def pod(
    name: str,
    cpu: str = "1",
    *,
    group: str = "",
    on: str = "",
    phase: str = "Pending",
    scheduler: str = "volcano",
    created: str = "2026-01-01T00:00:00Z",
    **extra: str,
) -> PodView:
    return PodView(
        namespace="ns",
        name=name,
        requests={**parse_resources({"cpu": cpu, **extra}), "pods": Decimal(1)},
        node_name=on,
        phase=phase,
        scheduler_name=scheduler,
        group=group,
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
        [node("n1", cpu="1")],
        [pod("a", scheduler="default-scheduler"), pod("b", scheduler="")],
        [],
        {"a": "n1"},
        id="default-scheduler pods are placed one by one without a gang",
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
        [pod("a", scheduler="default-scheduler")],
        [],
        {"a": "n2"},
        id="node names sort naturally (n2 before n10)",
    ),
    pytest.param(
        [
            node("n1", cpu="4", **{"nvidia.com/gpu": "0"}),
            node("n2", cpu="4", **{"nvidia.com/gpu": "2"}),
        ],
        [pod("a", group="pg", **{"nvidia.com/gpu": "2"})],
        [gang("pg", 1)],
        {"a": "n2"},
        id="extended resources such as nvidia.com/gpu are fitted",
    ),
    pytest.param(
        [NodeView("n1", parse_resources({"cpu": "4", "pods": "1"}))],
        [pod("a", scheduler=""), pod("b", scheduler="")],
        [],
        {"a": "n1"},
        id="every pod takes one of the node's pod slots",
    ),
    pytest.param(
        [NodeView("n1", parse_resources({"cpu": "4", "pods": "110"}), schedulable=False)],
        [pod("a", scheduler="")],
        [],
        {},
        id="unschedulable or not-ready nodes get no pods",
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
    assert decisions.podgroup_status == (PodGroupStatus("ns", "pg", "Pending", 0, 0, 0),)


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


def test_views_read_wire_objects() -> None:
    wire_node = {
        "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    assert node_view(wire_node).schedulable
    assert node_view(wire_node).allocatable["cpu"] == Decimal(8)
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
