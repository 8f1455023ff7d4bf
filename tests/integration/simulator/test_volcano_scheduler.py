"""The simulator's gang scheduler through the API, as Volcano's scheduler behaves: PodGroup status
on the main resource, Queue rules, the Unschedulable condition and event, Queue status."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster.running import LocalCluster, running_cluster
from localcluster.simulator.client import (
    EVENTS,
    NODES,
    PODGROUPS,
    PODS,
    QUEUES,
    ApiError,
    KubeClient,
)
from tests.integration.simulator.test_simulator import make_pod, phase_of, wait_for


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("volcano-scheduler"),
        webhook=False,
        nodes=1,
        pod_runtime="30s",
        extra_args=["--node-cpu", "4", "--node-memory", "8Gi"],
    ) as running:
        yield running


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> KubeClient:
    return cluster.rest_client()


@pytest.fixture
def namespace(client: KubeClient) -> str:
    name = f"vs-{uuid.uuid4().hex[:6]}"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
    return name


def podgroup(name: str, queue: str = "default", **resources: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": 1, "minResources": resources, "queue": queue},
    }


def condition(group: dict[str, Any], kind: str) -> dict[str, Any]:
    conditions = (group.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), {})


def test_podgroup_status_lives_on_the_main_resource(client: KubeClient, namespace: str) -> None:
    client.create(PODGROUPS, podgroup("pg", cpu="1"), namespace)
    with pytest.raises(ApiError) as raised:
        client.request("GET", PODGROUPS.path(namespace, "pg", "status"))
    assert raised.value.not_found
    admitted = wait_for(
        lambda: client.get(PODGROUPS, "pg", namespace),
        lambda g: phase_of(g) == "Inqueue",
        "the PodGroup to be admitted",
    )
    assert condition(admitted, "Scheduled")["status"] == "True"
    # A plain update of the main resource keeps the status the scheduler wrote.
    admitted["metadata"].setdefault("labels", {})["touched"] = "yes"
    updated = client.replace(PODGROUPS, admitted, namespace)
    assert phase_of(updated) == "Inqueue"


def test_a_gpu_gang_on_a_gpu_less_cluster_says_why(client: KubeClient, namespace: str) -> None:
    client.create(PODGROUPS, podgroup("gpu", **{"nvidia.com/gpu": "1"}), namespace)
    refused = wait_for(
        lambda: client.get(PODGROUPS, "gpu", namespace),
        lambda g: condition(g, "Unschedulable").get("status") == "True",
        "the Unschedulable condition",
    )
    assert phase_of(refused) == "Pending"
    unschedulable = condition(refused, "Unschedulable")
    assert unschedulable["reason"] == "NotEnoughResources"
    assert unschedulable["message"] == (
        "the gang's pod requests nvidia.com/gpu 1 but no node has nvidia.com/gpu: "
        "no node can run it"
    )
    events = wait_for(
        lambda: client.list(EVENTS, namespace)["items"],
        lambda items: any(e["involvedObject"]["name"] == "gpu" for e in items),
        "the Warning event",
    )
    (event,) = [e for e in events if e["involvedObject"]["name"] == "gpu"]
    assert (event["type"], event["reason"]) == ("Warning", "Unschedulable")
    assert event["involvedObject"]["kind"] == "PodGroup"


def test_closed_queue_and_capability_refuse_admission(client: KubeClient, namespace: str) -> None:
    name = f"q-{namespace}"
    client.create(
        QUEUES,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"capability": {"cpu": "1"}},
        },
    )
    client.create(PODGROUPS, podgroup("big", name, cpu="2"), namespace)
    big = wait_for(
        lambda: client.get(PODGROUPS, "big", namespace),
        lambda g: condition(g, "Unschedulable").get("status") == "True",
        "the capability refusal",
    )
    assert "capability" in condition(big, "Unschedulable")["message"]
    # The queue opens and counts its one Pending PodGroup (the count may follow the state).
    wait_for(
        lambda: client.get(QUEUES, name),
        lambda q: q.get("status", {}).get("state") == "Open" and q["status"].get("pending") == 1,
        "Open with one Pending PodGroup",
    )
    client.patch(QUEUES, name, {"status": {"state": "Closed"}}, subresource="status")
    # The scheduler acts on its watch of Queues, which may be a moment behind (a user who closes
    # a queue and submits right after may see one more admission too). It says when it has
    # seen the change: the Pending "big" is judged again every round, and a closed queue is
    # its first reason, before the capability.
    closed = f"queue {name} is Closed: it admits no new PodGroups"
    wait_for(
        lambda: client.get(PODGROUPS, "big", namespace),
        lambda g: condition(g, "Unschedulable").get("message") == closed,
        "the scheduler to see the queue Closed",
    )
    client.create(PODGROUPS, podgroup("small", name, cpu="500m"), namespace)
    small = wait_for(
        lambda: client.get(PODGROUPS, "small", namespace),
        lambda g: condition(g, "Unschedulable").get("status") == "True",
        "the closed-queue refusal",
    )
    assert condition(small, "Unschedulable")["message"] == closed


def test_queue_status_tracks_allocated_and_phases(client: KubeClient, namespace: str) -> None:
    name = f"a-{namespace}"
    client.create(
        QUEUES,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
        },
    )
    client.create(PODGROUPS, podgroup("run", name, cpu="1"), namespace)
    member = make_pod("m0", cpu="1", scheduler="volcano", group="run")

    client.create(PODS, member, namespace)
    status = wait_for(
        lambda: client.get(QUEUES, name).get("status") or {},
        lambda s: s.get("running") == 1 and s.get("allocated", {}).get("cpu") == "1",
        "the queue's allocated and running count",
    )
    assert status["state"] == "Open"
    assert status["allocated"]["pods"] == "1"


def test_a_gang_with_a_member_no_node_accepts_binds_none_of_them(
    client: KubeClient, namespace: str
) -> None:
    group = podgroup("pair", cpu="1")
    group["spec"]["minMember"] = 2
    client.create(PODGROUPS, group, namespace)
    free = make_pod("free", cpu="500m", scheduler="volcano", group="pair")
    picky = make_pod("picky", cpu="500m", scheduler="volcano", group="pair")
    picky["spec"]["nodeSelector"] = {"disktype": "nvme"}
    client.create(PODS, free, namespace)
    client.create(PODS, picky, namespace)
    refused = wait_for(
        lambda: client.get(PODGROUPS, "pair", namespace),
        lambda g: "Origin reason" in condition(g, "Unschedulable").get("message", ""),
        "the gang's Unschedulable condition",
    )
    assert phase_of(refused) == "Inqueue"
    assert condition(refused, "Unschedulable")["message"] == (
        "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 1 Schedulable, 1 Unschedulable. Origin reason is picky: 0/1 nodes are "
        "available: 1 node(s) didn't match Pod's node affinity/selector."
    )
    pods = wait_for(
        lambda: [client.get(PODS, name, namespace) for name in ("free", "picky")],
        lambda found: all(condition(p, "PodScheduled").get("status") == "False" for p in found),
        "both pods' PodScheduled conditions",
    )
    reasons = {p["metadata"]["name"]: condition(p, "PodScheduled")["reason"] for p in pods}
    assert reasons == {"free": "Schedulable", "picky": "Unschedulable"}
    assert not any(p["spec"].get("nodeName") for p in pods)
    events = wait_for(
        lambda: client.list(EVENTS, namespace)["items"],
        lambda items: any(e["reason"] == "FailedScheduling" for e in items),
        "the FailedScheduling event",
    )
    failed = next(e for e in events if e["reason"] == "FailedScheduling")
    assert failed["type"] == "Warning"
    assert failed["involvedObject"]["kind"] == "Pod"
    assert failed["source"]["component"] == "volcano"
    # The node gets the label: the whole gang goes, at once.
    client.patch(NODES, "node-1", {"metadata": {"labels": {"disktype": "nvme"}}})
    try:
        bound = wait_for(
            lambda: [client.get(PODS, name, namespace) for name in ("free", "picky")],
            lambda found: all(p["spec"].get("nodeName") == "node-1" for p in found),
            "the gang to be bound",
        )
        assert all(condition(p, "PodScheduled")["status"] == "True" for p in bound)
    finally:
        client.patch(NODES, "node-1", {"metadata": {"labels": {"disktype": None}}})
