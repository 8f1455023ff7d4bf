"""Deployments on the local cluster as kubectl and helm see them on a real one: rollouts,
history, undo, scaling, cascading deletion, and `helm install --wait` of a `helm create` chart."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster.running import LocalCluster, running_cluster
from tests.support import polling

pytestmark = pytest.mark.e2e

WAIT = 60.0


class Kubectl:
    """kubectl in one namespace of the test's own."""

    def __init__(self, cluster: LocalCluster, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl("-n", self.namespace, *args, check=check)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # A short pod runtime, so that a pod which would exit after it visibly does.
    with running_cluster(
        tmp_path_factory.mktemp("workloads"),
        webhook=False,
        controller=False,
        nodes=2,
        pod_runtime="1s",
    ) as running:
        yield running


@pytest.fixture
def kubectl(cluster: LocalCluster) -> Kubectl:
    """kubectl in a namespace of this test's own."""
    namespace = f"wl-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    return Kubectl(cluster, namespace)


def wait_for(read: Callable[[], Any], done: Callable[[Any], bool], what: str) -> Any:
    return polling.wait_for(read, done, what, WAIT, interval=0.2)


def items(kubectl: Kubectl, kind: str, selector: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(
        kubectl("get", kind, "-l", selector, "-o", "json").stdout
    )["items"]
    return found


def live_pods(kubectl: Kubectl, selector: str) -> list[dict[str, Any]]:
    return [
        p for p in items(kubectl, "pods", selector) if not p["metadata"].get("deletionTimestamp")
    ]


def all_running_and_ready(pods: list[dict[str, Any]], count: int) -> bool:
    return len(pods) == count and all(
        p["status"].get("phase") == "Running"
        and all(s.get("ready") for s in p["status"].get("containerStatuses") or [])
        for p in pods
    )


def revisions(kubectl: Kubectl, deployment: str) -> list[str]:
    history = kubectl("rollout", "history", f"deploy/{deployment}").stdout
    return [line.split()[0] for line in history.splitlines() if line[:1].isdigit()]


def test_a_deployment_rolls_out_updates_rolls_back_scales_and_goes(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
    kubectl("rollout", "status", "deploy/web", "--timeout=60s")

    (first,) = items(kubectl, "rs", "app=web")
    meta = first["metadata"]
    pod_hash = meta["labels"]["pod-template-hash"]
    assert meta["name"] == f"web-{pod_hash}"
    assert first["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert meta["annotations"]["deployment.kubernetes.io/revision"] == "1"
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "Deployment",
        "web",
        True,
        True,
    )
    pods = live_pods(kubectl, "app=web")
    assert all_running_and_ready(pods, 2), pods
    assert {p["metadata"]["ownerReferences"][0]["name"] for p in pods} == {meta["name"]}
    table = kubectl("get", "rs", meta["name"], "--no-headers").stdout.split()
    assert table[:4] == [meta["name"], "2", "2", "2"]  # NAME DESIRED CURRENT READY
    deployment = json.loads(kubectl("get", "deploy", "web", "-o", "json").stdout)
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    status = deployment["status"]
    assert status["observedGeneration"] == deployment["metadata"]["generation"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (2, 2, 2)
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"

    # A new template: a second ReplicaSet takes over.
    kubectl("set", "image", "deploy/web", "nginx=nginx:1.26")
    kubectl("rollout", "status", "deploy/web", "--timeout=60s")
    sets = {rs["metadata"]["name"]: rs for rs in items(kubectl, "rs", "app=web")}
    assert len(sets) == 2
    assert sets[meta["name"]]["spec"]["replicas"] == 0
    (second,) = (rs for name, rs in sets.items() if name != meta["name"])
    assert second["spec"]["replicas"] == 2
    assert second["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert revisions(kubectl, "web") == ["1", "2"]
    pods = wait_for(
        lambda: live_pods(kubectl, "app=web"),
        lambda found: (
            all_running_and_ready(found, 2)
            and {p["metadata"]["labels"]["pod-template-hash"] for p in found}
            == {second["metadata"]["labels"]["pod-template-hash"]}
        ),
        "the new pods alone",
    )

    # Undo: the first ReplicaSet comes back as revision 3.
    assert "rolled back" in kubectl("rollout", "undo", "deploy/web").stdout
    kubectl("rollout", "status", "deploy/web", "--timeout=60s")
    image = kubectl(
        "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    ).stdout
    assert image == "nginx:1.25"
    assert revisions(kubectl, "web") == ["2", "3"]
    sets = {rs["metadata"]["name"]: rs for rs in items(kubectl, "rs", "app=web")}
    assert set(sets) == {meta["name"], second["metadata"]["name"]}
    assert sets[meta["name"]]["spec"]["replicas"] == 2

    # Scale through the spec.
    kubectl("patch", "deploy", "web", "-p", '{"spec":{"replicas":3}}')
    kubectl("rollout", "status", "deploy/web", "--timeout=60s")
    wait_for(
        lambda: live_pods(kubectl, "app=web"),
        lambda found: (
            all_running_and_ready(found, 3)
            and {p["metadata"]["labels"]["pod-template-hash"] for p in found} == {pod_hash}
        ),
        "three pods of the first template",
    )

    # Deleting the Deployment takes its ReplicaSets and pods with it.
    kubectl("delete", "deploy", "web")
    wait_for(
        lambda: kubectl("get", "rs,pods", "-l", "app=web", "-o", "name").stdout.split(),
        lambda names: names == [],
        "the ReplicaSets and pods to go",
    )


def test_replica_set_pods_outlive_the_pod_runtime(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "server", "--image=nginx:1.25")
    kubectl("rollout", "status", "deploy/server", "--timeout=60s")
    # A bare pod with the same (default) script exits after the 1 s runtime and is restarted;
    # once it has been, the Deployment's pod has run longer than the runtime too.
    kubectl("run", "ticker", "--image=busybox:1.36", "--restart=Always")
    wait_for(
        lambda: json.loads(kubectl("get", "pod", "ticker", "-o", "json").stdout),
        lambda pod: any(
            s.get("restartCount", 0) >= 1 for s in pod["status"].get("containerStatuses") or []
        ),
        "the bare pod to restart",
    )
    (pod,) = live_pods(kubectl, "app=server")
    assert pod["status"]["phase"] == "Running"
    (container,) = pod["status"]["containerStatuses"]
    assert container["ready"] is True
    assert container["restartCount"] == 0
    assert "running" in container["state"]
    ready = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert ready["Ready"] == "True"


def test_helm_install_wait_of_a_created_chart(
    cluster: LocalCluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    namespace = kubectl.namespace

    def helm(*args: str) -> subprocess.CompletedProcess[str]:
        return cluster.helm(*args, home=tmp_path / "helm-home")

    chart = tmp_path / "demo"
    helm("create", str(chart))
    helm("install", "demo", str(chart), "-n", namespace, "--wait", "--timeout", "90s")
    selector = "app.kubernetes.io/instance=demo"
    assert all_running_and_ready(live_pods(kubectl, selector), 1)
    # helm reads the ReplicaSet's ready pods; the Deployment's own status follows a moment later.
    kubectl("wait", "deploy/demo", "--for=jsonpath={.status.readyReplicas}=1", "--timeout=30s")

    # An upgrade that changes the template waits for the new ReplicaSet.
    helm(
        "upgrade", "demo", str(chart), "-n", namespace, "--set", "image.tag=1.27",
        "--set", "replicaCount=2", "--wait", "--timeout", "90s",
    )  # fmt: skip
    pods = wait_for(
        lambda: live_pods(kubectl, selector),
        lambda found: (
            all_running_and_ready(found, 2)
            and {p["spec"]["containers"][0]["image"] for p in found} == {"nginx:1.27"}
        ),
        "the upgraded pods",
    )
    assert len(pods) == 2

    helm("uninstall", "demo", "-n", namespace)
    wait_for(
        lambda: kubectl("get", "deploy,rs,pods", "-l", selector, "-o", "name").stdout.split(),
        lambda names: names == [],
        "the release's workloads to go",
    )
