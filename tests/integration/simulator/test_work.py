"""Work-based training against the local API server: more workers finish the same work sooner."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster.running import running_cluster
from localcluster.simulator.client import PODS, KubeClient
from tests.support.polling import wait_for

WAIT = 60.0


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeClient]:
    with running_cluster(
        tmp_path_factory.mktemp("work"), webhook=False, nodes=1, pod_runtime="1s"
    ) as cluster:
        yield cluster.rest_client()


def worker(job: str, index: int, work: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-worker-{index}",
            "labels": {"volcano.sh/job-name": job, "volcano.sh/task-spec": "worker"},
            "annotations": {
                "sim.vcjob.io/work": work,
                "sim.vcjob.io/speedup-alpha": "1",
                "sim.vcjob.io/resize-pause": "0s",
            },
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }


def phases(client: KubeClient, namespace: str) -> dict[str, str]:
    pods = client.list(PODS, namespace)["items"]
    return {p["metadata"]["name"]: (p.get("status") or {}).get("phase", "") for p in pods}


def test_two_workers_finish_the_work_before_one(client: KubeClient) -> None:
    namespace = f"work-{uuid.uuid4().hex[:6]}"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    for pod in (worker("pair", 0, "8"), worker("pair", 1, "8"), worker("alone", 0, "8")):
        client.create(PODS, pod, namespace)
    finished: dict[str, float] = {}
    start = time.monotonic()

    def finish_times() -> dict[str, float]:
        """When each pod finished, in seconds after the start (to a tenth)."""
        for name, phase in phases(client, namespace).items():
            if phase in ("Succeeded", "Failed"):
                assert phase == "Succeeded", name
                finished.setdefault(name, time.monotonic() - start)
        return finished

    wait_for(finish_times, lambda found: len(found) == 3, "the three pods finished", WAIT, 0.1)
    # The pair does 2 replica-seconds per second: 4 s; the lone worker needs 8 s.
    assert max(finished["pair-worker-0"], finished["pair-worker-1"]) < finished["alone-worker-0"]
    assert abs(finished["pair-worker-0"] - finished["pair-worker-1"]) < 1.0
