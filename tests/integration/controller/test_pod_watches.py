"""Each pod reaches the controller process once: the Job controller watches the pods of Jobs
(`volcano.sh/job-name`), the PodGroup controller of plain workloads every other pod."""

from __future__ import annotations

from typing import Any

from controller.workloads.shell import PodGroupController
from kubeio.client import PODS, Kube
from kubeio.events import EventRecorder
from localcluster.running import LocalCluster
from tests.support.polling import wait_until


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }


def test_the_workload_podgroup_controller_does_not_watch_the_pods_of_jobs(
    cluster: LocalCluster,
) -> None:
    kube = Kube(cluster.api_client(), qps=0)
    workloads = PodGroupController(kube, EventRecorder(kube, "test"), lambda: False)
    workloads.start()
    try:
        assert workloads.pods.wait_synced(30)
        kube.create(PODS, "default", pod("of-a-job", {"volcano.sh/job-name": "some-job"}))
        kube.create(PODS, "default", pod("plain", {"app": "plain"}))
        wait_until(
            "the plain pod in the workload controller's store",
            lambda: workloads.pods.get("default/plain") is not None,
            30,
        )
        # Both pods were created before the plain one was seen: the watch delivers in order.
        assert workloads.pods.get("default/of-a-job") is None
    finally:
        workloads.shutdown()
        for name in ("of-a-job", "plain"):
            kube.delete(PODS, "default", name)
