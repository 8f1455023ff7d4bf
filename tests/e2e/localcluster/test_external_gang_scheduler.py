"""`vcjob local up --external-gang-scheduler`: the node agent leaves PodGroups and the `volcano`
scheduler's pods to a scheduler started apart (Volcano's vc-scheduler in scripts/volcano-e2e).
Here the test plays that scheduler through the API, as vc-scheduler does: it admits the gang
(PodGroup Inqueue) and binds each pod; the agent then runs them and the Job goes Running."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as kube_client

from localcluster.running import LocalCluster, running_cluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e

WAIT = 90.0
JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "outside", "namespace": "default"},
    "spec": {
        "schedulerName": "volcano",
        "minAvailable": 2,
        "tasks": [
            {
                "name": "w",
                "replicas": 2,
                "template": {
                    "metadata": {"annotations": {"sim.vcjob.io/runtime": "600s"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("external-gang"),
        controller=True,
        nodes=2,
        extra_args=("--external-gang-scheduler",),
    ) as running:
        yield running


def get(cluster: LocalCluster, *what: str) -> Any:
    return json.loads(cluster.kubectl("get", *what, "-n", "default", "-o", "json").stdout)


def test_pods_wait_for_the_external_scheduler_then_run(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "-f", "-", input=json.dumps(JOB))
    group = wait_for(
        lambda: get(cluster, "podgroups.scheduling.volcano.sh")["items"],
        lambda items: len(items) == 1,
        "the Job's PodGroup",
        WAIT,
    )[0]
    # Nobody admitted it: the agent wrote no status, and the controller creates no pod yet.
    assert (group.get("status") or {}).get("phase", "Pending") == "Pending"
    assert not (group.get("status") or {}).get("conditions")
    assert get(cluster, "pods")["items"] == []

    # What vc-scheduler does: admit the gang, then bind its pods.
    group["status"] = {"phase": "Inqueue"}
    cluster.kubectl("replace", "-f", "-", input=json.dumps(group))
    pods = wait_for(
        lambda: get(cluster, "pods")["items"],
        lambda items: len(items) == 2,
        "the controller to create the admitted gang's pods",
        WAIT,
    )
    assert all(not p["spec"].get("nodeName") for p in pods)
    core = kube_client.CoreV1Api(cluster.api_client())
    for i, pod in enumerate(pods):
        name = pod["metadata"]["name"]
        binding = kube_client.V1Binding(
            metadata=kube_client.V1ObjectMeta(name=name),
            target=kube_client.V1ObjectReference(kind="Node", name=f"node-{i + 1}"),
        )
        core.create_namespaced_binding("default", binding, _preload_content=False)
    wait_for(
        lambda: get(cluster, "pods")["items"],
        lambda items: [p["status"].get("phase") for p in items] == ["Running", "Running"],
        "the agent to run the bound pods",
        WAIT,
    )
    wait_for(
        lambda: get(cluster, "vcjob", "outside"),
        lambda job: (job.get("status") or {}).get("state", {}).get("phase") == "Running",
        "the Job to be Running",
        WAIT,
    )
    # The PodGroup's status is the external scheduler's to write: the agent left it as set.
    assert get(cluster, "podgroups.scheduling.volcano.sh", group["metadata"]["name"])["status"] == {
        "phase": "Inqueue"
    }
