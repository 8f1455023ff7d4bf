"""The node agent against kube-apiserver and kube-controller-manager, seen through kubectl: its
nodes turn Ready and lose the taint kube-apiserver puts on every new node, their Leases are renewed,
the `volcano` scheduler keeps a pod no node accepts Pending and says why (PodScheduled, events,
the PodGroup's condition), a toleration lets a pod onto a tainted node; a Node no kubelet serves
goes NotReady and its pods are evicted, and when the agent stops the node lifecycle controller
marks every node NotReady and taints it, as on a cluster whose kubelets went away.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster import kubebin
from localcluster.running import LocalCluster, running_cluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e

NODES = ("node-1", "node-2", "node-3")
WAIT = 60.0
# kube-controller-manager's default --node-monitor-grace-period (50 s), its node monitor period
# (5 s) and the agent's last renewal (up to 10 s before it stopped), with room to spare.
NOT_READY_WAIT = 120.0
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
STRAY = "node-x"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("node-agent"),
        webhook=False,
        nodes=len(NODES),
        pod_runtime="1h",
        extra_args=["--node-cpu", "4", "--node-memory", "8Gi"],
    ) as running:
        yield running


@pytest.fixture(scope="module")
def stray_node(cluster: LocalCluster) -> str:
    """A Node registered by hand, which no kubelet serves (created early: the node lifecycle
    controller gives it a grace period before it gives up on it). Its own taint keeps the
    scheduler's messages the same before and after that."""
    apply(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": STRAY},
            "spec": {"taints": [{"key": "example.com/stray", "effect": "NoSchedule"}]},
        },
    )
    return STRAY


@pytest.fixture
def namespace(cluster: LocalCluster) -> str:
    name = f"na-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    return name


def get(cluster: LocalCluster, *what: str) -> Any:
    return json.loads(cluster.kubectl("get", *what, "-o", "json").stdout)


def apply(cluster: LocalCluster, *documents: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(d) for d in documents))


def ready_status(node: dict[str, Any]) -> str:
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((str(c["status"]) for c in conditions if c["type"] == "Ready"), "")


def taint_keys(node: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in (node.get("spec") or {}).get("taints") or []}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), {})


def podgroup(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": 1, "minResources": {"cpu": "100m"}, "queue": "default"},
    }


def pod(name: str, namespace: str, *, group: str = "", **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if group:
        metadata["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": "volcano",
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 5,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": "100m"}},
                }
            ],
            **spec,
        },
    }


def test_nodes_turn_ready_and_lose_the_not_ready_taint(
    cluster: LocalCluster, stray_node: str
) -> None:
    nodes = wait_for(
        lambda: get(cluster, "nodes")["items"],
        lambda items: all(
            ready_status(n) == "True" and not taint_keys(n)
            for n in items
            if n["metadata"]["name"] in NODES
        ),
        "every node of the agent Ready and untainted",
        WAIT,
    )
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert set(by_name) == {*NODES, stray_node}
    for name in NODES:
        status = by_name[name]["status"]
        assert status["nodeInfo"]["kubeletVersion"] == kubebin.KUBERNETES_VERSION
        assert {"type": "InternalIP", "address": "127.0.0.1"} in status["addresses"]
        assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    assert ready_status(by_name[stray_node]) != "True"
    wide = cluster.kubectl("get", "nodes", "-o", "wide").stdout
    assert wide.count(" Ready ") == len(NODES), wide


def test_node_leases_are_held_and_renewed(cluster: LocalCluster) -> None:
    first = wait_for(
        lambda: get(cluster, "lease", "-n", "kube-node-lease")["items"],
        lambda items: {i["metadata"]["name"] for i in items} >= set(NODES),
        "a Lease per node",
        WAIT,
    )
    lease = next(i for i in first if i["metadata"]["name"] == "node-1")
    assert lease["spec"]["holderIdentity"] == "node-1"
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    renewed = wait_for(
        lambda: get(cluster, "lease", "node-1", "-n", "kube-node-lease"),
        lambda current: current["spec"]["renewTime"] != lease["spec"]["renewTime"],
        "the Lease to be renewed",
        30.0,
    )
    assert renewed["spec"]["renewTime"] > lease["spec"]["renewTime"]


def test_a_pod_whose_affinity_no_node_meets_stays_pending_and_says_why(
    cluster: LocalCluster, namespace: str, stray_node: str
) -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["moon"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]},
                ]
            }
        }
    }
    apply(
        cluster,
        podgroup("nowhere", namespace),
        pod("nowhere-0", namespace, group="nowhere", affinity=affinity),
    )
    reason = (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), "
        "3 node(s) didn't match Pod's node affinity/selector."
    )
    waiting = wait_for(
        lambda: get(cluster, "pod", "nowhere-0", "-n", namespace),
        lambda p: condition(p, "PodScheduled").get("message") == reason,
        "the pod's PodScheduled condition",
        WAIT,
    )
    assert waiting["status"]["phase"] == "Pending"
    assert not waiting["spec"].get("nodeName")
    assert condition(waiting, "PodScheduled")["reason"] == "Unschedulable"
    # The scheduler posts its FailedScheduling event after it wrote the condition.
    described = wait_for(
        lambda: cluster.kubectl("describe", "pod", "nowhere-0", "-n", namespace).stdout,
        lambda text: "FailedScheduling" in text,
        "the FailedScheduling event in kubectl describe",
        WAIT,
    )
    assert "didn't match Pod's node affinity/selector" in described
    group = wait_for(
        lambda: get(cluster, "podgroups.scheduling.volcano.sh", "nowhere", "-n", namespace),
        lambda g: condition(g, "Unschedulable").get("status") == "True",
        "the PodGroup's Unschedulable condition",
        WAIT,
    )
    assert condition(group, "Unschedulable")["message"].endswith(
        f"Origin reason is nowhere-0: {reason}"
    )
    # Likewise the PodGroup's event follows its condition.
    wait_for(
        lambda: get(cluster, "events", "-n", namespace)["items"],
        lambda events: any(
            e["reason"] == "Unschedulable" and e["involvedObject"]["kind"] == "PodGroup"
            for e in events
        ),
        "the PodGroup's Unschedulable event",
        WAIT,
    )
    # Once a node carries the label, the pod goes there and nowhere else.
    cluster.kubectl("label", "node", "node-2", "zone=moon")
    try:
        bound = wait_for(
            lambda: get(cluster, "pod", "nowhere-0", "-n", namespace),
            lambda p: bool(p["spec"].get("nodeName")),
            "the pod to be bound once a node matches",
            WAIT,
        )
        assert bound["spec"]["nodeName"] == "node-2"
    finally:
        cluster.kubectl("label", "node", "node-2", "zone-")


def test_a_toleration_lets_a_pod_onto_a_tainted_node(
    cluster: LocalCluster, namespace: str, stray_node: str
) -> None:
    # The taint before the label: a scheduler whose view of node-3 already has the label has its
    # taint too (one object, one watch, in order), so the intolerant pod is never placed there.
    cluster.kubectl("taint", "node", "node-3", "dedicated=special:NoSchedule", "--overwrite")
    cluster.kubectl("label", "node", "node-3", "pool=special", "--overwrite")
    try:
        selector = {"pool": "special"}
        toleration = {
            "key": "dedicated",
            "operator": "Equal",
            "value": "special",
            "effect": "NoSchedule",
        }
        apply(
            cluster,
            pod("intolerant", namespace, nodeSelector=selector),
            pod("tolerant", namespace, nodeSelector=selector, tolerations=[toleration]),
        )
        placed = wait_for(
            lambda: get(cluster, "pod", "tolerant", "-n", namespace),
            lambda p: (p.get("status") or {}).get("phase") == "Running",
            "the tolerant pod to run",
            WAIT,
        )
        assert placed["spec"]["nodeName"] == "node-3"
        # node-1 and node-2 lack the label; node-3 and the stray node are tainted. The message
        # is rewritten each round from the scheduler's view of the nodes, which takes in the
        # label and the taint a moment after kubectl: wait for the one that names both.
        reason = (
            "0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
            "2 node(s) had untolerated taint(s)."
        )
        refused = wait_for(
            lambda: get(cluster, "pod", "intolerant", "-n", namespace),
            lambda p: condition(p, "PodScheduled").get("message") == reason,
            "the intolerant pod's reason",
            WAIT,
        )
        assert not refused["spec"].get("nodeName")
    finally:
        cluster.kubectl("taint", "node", "node-3", "dedicated:NoSchedule-", check=False)
        cluster.kubectl("label", "node", "node-3", "pool-", check=False)


def test_a_node_no_kubelet_serves_goes_not_ready_and_its_pods_are_evicted(
    cluster: LocalCluster, namespace: str, stray_node: str
) -> None:
    evict_soon = {
        "key": UNREACHABLE,
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 1,
    }
    # Bound by name, past any scheduler: only a kubelet of that node would ever run it.
    apply(cluster, pod("stray", namespace, nodeName=stray_node, tolerations=[evict_soon]))
    try:
        node = wait_for(
            lambda: get(cluster, "node", stray_node),
            lambda n: ready_status(n) == "Unknown" and (UNREACHABLE, "NoExecute") in taint_keys(n),
            "the stray node to be given up on",
            NOT_READY_WAIT,
        )
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        assert ready["reason"] == "NodeStatusNeverUpdated"
        evicted = wait_for(
            lambda: get(cluster, "pod", "stray", "-n", namespace),
            lambda p: bool(p["metadata"].get("deletionTimestamp")),
            "the taint eviction controller to evict the pod",
            WAIT,
        )
        # No kubelet ran it, and none confirms it stopped: it stays Terminating.
        assert (evicted.get("status") or {}).get("phase") == "Pending"
        agents = get(cluster, "nodes")["items"]
        assert all(ready_status(n) == "True" for n in agents if n["metadata"]["name"] in NODES)
    finally:
        cluster.kubectl("delete", "node", stray_node, "--wait=false")


def test_a_stopped_agent_leaves_its_nodes_not_ready_and_tainted(
    cluster: LocalCluster, namespace: str
) -> None:
    """Last in this module: it freezes the agent for a minute (SIGSTOP rather than a kill, which
    `vcjob local up` would answer by starting it again). With every node down at once the node
    lifecycle controller enters its full-disruption mode and evicts nothing, so the pod runs on
    once the agent is back."""
    apply(cluster, pod("survivor", namespace, schedulerName="default-scheduler"))
    wait_for(
        lambda: get(cluster, "pod", "survivor", "-n", namespace),
        lambda p: (p.get("status") or {}).get("phase") == "Running",
        "the pod to run",
        WAIT,
    )
    wait_for(
        lambda: get(cluster, "nodes")["items"],
        lambda items: {n["metadata"]["name"] for n in items} == set(NODES),
        "the stray node to be gone",
        WAIT,
    )
    agent = cluster.component_pids()["simulator"]
    os.kill(agent, signal.SIGSTOP)
    try:
        nodes = wait_for(
            lambda: get(cluster, "nodes")["items"],
            lambda items: all(
                ready_status(n) == "Unknown" and (UNREACHABLE, "NoSchedule") in taint_keys(n)
                for n in items
            ),
            "every node NotReady and tainted unreachable",
            NOT_READY_WAIT,
        )
        ready = next(c for c in nodes[0]["status"]["conditions"] if c["type"] == "Ready")
        assert (ready["reason"], ready["message"]) == (
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
    finally:
        os.kill(agent, signal.SIGCONT)
    wait_for(
        lambda: get(cluster, "nodes")["items"],
        lambda items: all(
            ready_status(n) == "True"
            and not ({UNREACHABLE, NOT_READY} & {key for key, _ in taint_keys(n)})
            for n in items
        ),
        "the nodes to be Ready and untainted again",
        WAIT,
    )
    survivor = get(cluster, "pod", "survivor", "-n", namespace)
    assert not survivor["metadata"].get("deletionTimestamp")
    assert survivor["status"]["phase"] == "Running"
