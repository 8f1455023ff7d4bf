"""The simulator against the real local API server: pods run, fail, restart, wait, die."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster.running import LocalCluster, running_cluster
from localcluster.simulator.client import PODGROUPS, PODS, ApiError, KubeClient
from tests.support import polling

WAIT = 60.0  # generous: two workers each start clusters on a small CI machine


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # Two nodes of 4 CPUs: small enough for the gang test to fill them.
    with running_cluster(
        tmp_path_factory.mktemp("simulator"),
        webhook=False,
        nodes=2,
        pod_runtime="1s",
        extra_args=["--node-cpu", "4", "--node-memory", "8Gi"],
    ) as running:
        yield running


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> KubeClient:
    return cluster.rest_client()


@pytest.fixture
def namespace(client: KubeClient) -> str:
    name = f"sim-{uuid.uuid4().hex[:6]}"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
    return name


def make_pod(
    name: str,
    *,
    annotations: dict[str, str] | None = None,
    restart_policy: str = "Never",
    cpu: str | None = None,
    scheduler: str = "default-scheduler",
    group: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox:1.36"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    all_annotations = dict(annotations or {})
    if group is not None:
        all_annotations["scheduling.k8s.io/group-name"] = group
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": all_annotations},
        "spec": {
            "schedulerName": scheduler,
            "restartPolicy": restart_policy,
            "containers": [container],
        },
    }


def wait_for(read: Any, done: Any, what: str, timeout: float = WAIT, interval: float = 0.1) -> Any:
    return polling.wait_for(read, done, what, timeout, interval)


def phase_of(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def container_state(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0].get("state") or {})


def test_pod_succeeds_after_its_runtime(client: KubeClient, namespace: str) -> None:
    client.create(PODS, make_pod("ok"), namespace)
    running = wait_for(
        lambda: client.get(PODS, "ok", namespace),
        lambda p: phase_of(p) in ("Running", "Succeeded"),
        "running",
    )
    assert running["spec"]["nodeName"] in ("node-1", "node-2")
    status = running["status"]
    assert status["podIP"].startswith("10.244.")
    assert status["hostIP"] == "127.0.0.1"
    assert status["startTime"]
    done = wait_for(
        lambda: client.get(PODS, "ok", namespace), lambda p: phase_of(p) == "Succeeded", "success"
    )
    terminated = container_state(done)["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")


def test_exit_code_annotation_fails_the_pod(client: KubeClient, namespace: str) -> None:
    pod = make_pod("bad", annotations={"sim.vcjob.io/exit-code": "3"})
    client.create(PODS, pod, namespace)
    failed = wait_for(
        lambda: client.get(PODS, "bad", namespace),
        lambda p: phase_of(p) in ("Failed", "Succeeded"),
        "the pod to finish",
    )
    assert phase_of(failed) == "Failed"
    terminated = container_state(failed)["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")


def test_on_failure_restarts_the_container(client: KubeClient, namespace: str) -> None:
    pod = make_pod(
        "flaky", annotations={"sim.vcjob.io/fail-after": "500ms"}, restart_policy="OnFailure"
    )
    client.create(PODS, pod, namespace)
    restarted = wait_for(
        lambda: client.get(PODS, "flaky", namespace),
        lambda p: (
            ((p.get("status") or {}).get("containerStatuses") or [{}])[0].get("restartCount", 0)
            >= 1
        ),
        "a restart",
    )
    assert phase_of(restarted) == "Running"
    container = restarted["status"]["containerStatuses"][0]
    assert container["lastState"]["terminated"]["exitCode"] == 1


def test_gang_waits_until_capacity_frees(client: KubeClient, namespace: str) -> None:
    # Each blocker takes 3 of a node's 4 CPUs for 5 s: 2 CPUs stay free, the gang needs 3.
    for index in (1, 2):
        blocker = make_pod(f"blocker-{index}", cpu="3", annotations={"sim.vcjob.io/runtime": "5s"})
        client.create(PODS, blocker, namespace)
    wait_for(
        lambda: [client.get(PODS, f"blocker-{i}", namespace) for i in (1, 2)],
        lambda pods: all(phase_of(p) == "Running" for p in pods),
        "the blockers to run",
    )
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "gang"},
        "spec": {"minMember": 3, "minResources": {"cpu": "3"}, "queue": "default"},
    }
    client.create(PODGROUPS, group, namespace)
    for index in range(3):
        member = make_pod(f"member-{index}", cpu="1", scheduler="volcano", group="gang")
        client.create(PODS, member, namespace)

    # The scheduler has looked at the gang and refused it while the blockers run.
    waiting = wait_for(
        lambda: client.get(PODGROUPS, "gang", namespace),
        lambda g: any(
            c.get("type") == "Unschedulable" and c.get("status") == "True"
            for c in (g.get("status") or {}).get("conditions") or []
        ),
        "the gang refused for want of capacity",
    )
    assert phase_of(waiting) == "Pending"
    for index in range(3):
        assert not client.get(PODS, f"member-{index}", namespace)["spec"].get("nodeName")

    admitted = wait_for(
        lambda: client.get(PODGROUPS, "gang", namespace),
        lambda g: phase_of(g) in ("Inqueue", "Running"),
        "the gang to be admitted",
    )
    assert phase_of(admitted) in ("Inqueue", "Running")
    members = wait_for(
        lambda: [client.get(PODS, f"member-{i}", namespace) for i in range(3)],
        lambda found: all(phase_of(p) in ("Running", "Succeeded") for p in found),
        "the gang's pods to run",
    )
    assert all(p["spec"]["nodeName"] for p in members)
    running = wait_for(
        lambda: client.get(PODGROUPS, "gang", namespace),
        lambda g: phase_of(g) == "Running",
        "the gang to be Running",
    )
    assert running["status"]["running"] + running["status"].get("succeeded", 0) >= 3


def test_deleting_a_running_pod_kills_it_then_removes_it(
    client: KubeClient, namespace: str
) -> None:
    client.create(PODS, make_pod("victim", annotations={"sim.vcjob.io/runtime": "1h"}), namespace)
    running = wait_for(
        lambda: client.get(PODS, "victim", namespace), lambda p: phase_of(p) == "Running", "running"
    )
    events: list[dict[str, Any]] = []
    watching = threading.Event()

    def watch() -> None:
        version = running["metadata"]["resourceVersion"]
        stream = client.watch(
            PODS,
            version,
            namespace=namespace,
            params={"fieldSelector": "metadata.name=victim"},
            timeout_seconds=15,
        )
        watching.set()
        for event in stream:
            events.append(event)
            if event["type"] == "DELETED":
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    watching.wait(5)
    started = time.monotonic()
    client.delete(PODS, "victim", namespace)  # the default 30 s grace period
    watcher.join(WAIT)
    elapsed = time.monotonic() - started

    assert events, "no watch events"
    assert events[-1]["type"] == "DELETED"
    assert elapsed < 10, "the kubelet caps the grace period"
    terminating = [e["object"] for e in events if e["object"]["metadata"].get("deletionTimestamp")]
    assert terminating, "the pod was never seen terminating"
    killed = [container_state(p).get("terminated") for p in terminating]
    assert any(k and k["exitCode"] == 137 for k in killed)


def test_official_client_sees_the_simulated_nodes(cluster: LocalCluster) -> None:
    from kubernetes import client as kube_client

    api = kube_client.CoreV1Api(cluster.api_client())
    names, ready, cpu = [], set(), set()
    for node in api.list_node().items:
        assert node.metadata is not None
        assert node.status is not None
        names.append(str(node.metadata.name))
        ready |= {c.status for c in node.status.conditions or [] if c.type == "Ready"}
        cpu.add((node.status.allocatable or {}).get("cpu"))
    assert sorted(names) == ["node-1", "node-2"]
    assert ready == {"True"}
    assert cpu == {"4"}


def test_cluster_path_layout(cluster: LocalCluster) -> None:
    state = cluster.state
    assert Path(state["kubeconfig"]) == cluster.kubeconfig.resolve()
    assert set(state["components"]) >= {"etcd", "kube-apiserver", "simulator"}


def test_a_uid_precondition_spares_a_pod_created_again_under_the_same_name(
    client: KubeClient, namespace: str
) -> None:
    """The kubelet's final delete names the pod's UID: a pod re-created under the same name is
    not the one it stopped, and kube-apiserver refuses to delete it."""
    created = client.create(
        PODS, make_pod("same", annotations={"sim.vcjob.io/runtime": "1h"}), namespace
    )
    with pytest.raises(ApiError) as refused:
        client.delete(
            PODS, "same", namespace, grace_period_seconds=0, uid="not-" + created["metadata"]["uid"]
        )
    assert refused.value.code == 409
    assert client.get(PODS, "same", namespace)["metadata"]["uid"] == created["metadata"]["uid"]
    client.delete(PODS, "same", namespace, grace_period_seconds=0, uid=created["metadata"]["uid"])
    wait_for(
        lambda: client.list(PODS, namespace, params={"fieldSelector": "metadata.name=same"}),
        lambda listing: not listing["items"],
        "the pod to be gone",
    )
