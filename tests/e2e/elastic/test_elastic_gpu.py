"""Two elastic jobs share 8 simulated GPUs; a third job takes 3 of them and gives them back.

Runs the whole system (`vcjob local up` with webhook, controller and simulator; the elastic loop
every second). With VCJOB_RECORD_ELASTIC=1 the replicas seen every 0.5 s are written to
docs/elastic-run.json, which `bench/elastic_plot.py` turns into docs/elastic-replicas.png.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes import client

from localcluster.running import LocalCluster, running_cluster
from tests.support import polling

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GPU = "nvidia.com/gpu"
GROUP, VERSION, PLURAL = "batch.volcano.sh", "v1alpha1", "jobs"
NAMESPACE = "default"
PERIOD = "1s"
RECORD = Path(__file__).resolve().parents[3] / "docs" / "elastic-run.json"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "elastic-gpu.yaml"


def gpu_job(
    name: str, replicas: int, runtime: str, bounds: tuple[int, int] | None = None
) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "name": "worker",
        "replicas": replicas,
        "template": {
            "metadata": {"annotations": {"sim.vcjob.io/runtime": runtime}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "trainer",
                        "image": "busybox",
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "1Gi", GPU: "1"},
                            "limits": {"cpu": "500m", "memory": "1Gi", GPU: "1"},
                        },
                    }
                ],
            },
        },
    }
    if bounds:
        worker["minReplicas"], worker["maxReplicas"] = bounds
        worker["minAvailable"] = bounds[0]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": bounds[0] if bounds else replicas,
            "tasks": [worker],
        },
    }


class Recorder:
    """Samples every job's worker replicas, running pods and phase every 0.5 s in a thread."""

    def __init__(self, cluster: LocalCluster) -> None:
        api = cluster.api_client()
        self._jobs = client.CustomObjectsApi(api)
        self._pods = client.CoreV1Api(api)
        self.start = time.monotonic()
        self.samples: list[dict[str, Any]] = []
        self.marks: list[dict[str, Any]] = []
        self.latest: dict[str, Any] = {"replicas": {}, "running": {}, "phase": {}}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="elastic-recorder", daemon=True)

    def __enter__(self) -> Recorder:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def mark(self, label: str) -> None:
        self.marks.append({"t": round(time.monotonic() - self.start, 2), "label": label})

    def sample(self) -> dict[str, Any]:
        jobs = cast(
            dict[str, Any],
            self._jobs.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL),
        )
        # Read-only, so the client's models are fine here.
        running = [
            (p.metadata.labels or {}).get("volcano.sh/job-name")
            for p in self._pods.list_namespaced_pod(NAMESPACE).items
            if p.metadata is not None
            and not p.metadata.deletion_timestamp
            and p.status is not None
            and p.status.phase == "Running"
        ]
        snapshot: dict[str, Any] = {"replicas": {}, "running": {}, "phase": {}}
        for job in jobs["items"]:
            name = job["metadata"]["name"]
            snapshot["replicas"][name] = job["spec"]["tasks"][0].get("replicas", 0)
            snapshot["phase"][name] = ((job.get("status") or {}).get("state") or {}).get("phase")
            snapshot["running"][name] = running.count(name)
        return snapshot

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                snapshot = self.sample()
            except Exception:  # a missed sample is only a gap in the plot
                snapshot = None
            if snapshot is not None:
                self.latest = snapshot
                self.samples.append({"t": round(time.monotonic() - self.start, 2), **snapshot})
            self._stop.wait(0.5)

    def wait_for(
        self, what: str, condition: Callable[[dict[str, Any]], bool], timeout: float
    ) -> None:
        polling.wait_for(lambda: self.latest, condition, what, timeout, interval=0.2)


def elastic_rounds(cluster: LocalCluster) -> float:
    """The autoscaler's rounds so far, from the controller's /metrics."""
    port = cluster.state["components"]["controller"]["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    match = re.search(r"^volcano_elastic_rounds_total (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def elastic(snapshot: dict[str, Any]) -> int:
    return int(snapshot["replicas"].get("a", 0)) + int(snapshot["replicas"].get("b", 0))


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # The autoscaler is on by default; `vcjob local up` forwards --elastic-period to it.
    with running_cluster(
        tmp_path_factory.mktemp("elastic"),
        simulator=True,
        webhook=True,
        controller=True,
        nodes=2,
        node_gpu=4,
        pod_runtime="10m",
        extra_args=["--elastic-period", PERIOD],
    ) as running:
        yield running


def test_elastic_jobs_share_gpus_with_a_job_that_comes_and_goes(cluster: LocalCluster) -> None:
    with Recorder(cluster) as recorder:
        recorder.mark("a and b submitted")
        apply(cluster, gpu_job("a", 1, "10m", (1, 6)), gpu_job("b", 1, "10m", (1, 6)))
        recorder.wait_for("a and b to fill the 8 GPUs", lambda s: elastic(s) == 8, 60)
        recorder.wait_for(
            "8 worker pods running",
            lambda s: s["running"].get("a", 0) + s["running"].get("b", 0) == 8,
            60,
        )
        assert min(recorder.latest["replicas"]["a"], recorder.latest["replicas"]["b"]) >= 2

        recorder.mark("c submitted (needs 3 GPUs)")
        apply(cluster, gpu_job("c", 3, "8s"))
        recorder.wait_for("c to run", lambda s: s["running"].get("c", 0) == 3, 60)
        recorder.mark("c running")
        during = recorder.latest
        assert elastic(during) == 5
        assert during["replicas"]["a"] >= 1 and during["replicas"]["b"] >= 1

        recorder.wait_for("c to complete", lambda s: s["phase"].get("c") == "Completed", 60)
        recorder.mark("c completed")
        recorder.wait_for("a and b to grow back to 8 GPUs", lambda s: elastic(s) == 8, 60)
        recorder.wait_for(
            "8 worker pods running again",
            lambda s: s["running"].get("a", 0) + s["running"].get("b", 0) == 8,
            60,
        )
        # Three more rounds of the autoscaler: nothing moves once the cluster is full.
        rounds = elastic_rounds(cluster)
        polling.wait_until(
            "three more elastic rounds", lambda: elastic_rounds(cluster) >= rounds + 3, 60
        )
        assert elastic(recorder.sample()) == 8

    # Never more elastic replicas than GPUs left over, never below minReplicas.
    for sample in recorder.samples:
        assert all(sample["replicas"].get(j, 1) >= 1 for j in ("a", "b"))
        assert elastic(sample) <= 8

    events = client.CoreV1Api(cluster.api_client()).list_namespaced_event(NAMESPACE).items
    messages: dict[str, list[str]] = {}
    for event in events:
        if event.reason == "Scaled" and event.source and event.source.component == "vcjob-elastic":
            messages.setdefault(str(event.involved_object.name), []).append(str(event.message))
    assert any("GPUs idle" in m for m in messages.get("a", []))
    taken = [*messages.get("a", []), *messages.get("b", [])]
    assert any("job default/c needs" in m for m in taken)

    if os.environ.get("VCJOB_RECORD_ELASTIC") == "1":
        RECORD.write_text(
            json.dumps(
                {
                    "scenario": "2 simulated nodes x 4 GPUs; a and b elastic (1..6 workers, 1 GPU "
                    "each); c needs 3 GPUs for 8 s; elastic period 1 s",
                    "period_seconds": 1,
                    "gpus": 8,
                    "marks": recorder.marks,
                    "samples": recorder.samples,
                },
                indent=1,
            )
            + "\n"
        )


def test_the_example_is_accepted(cluster: LocalCluster) -> None:
    result = cluster.kubectl("apply", "--dry-run=server", "-f", str(EXAMPLE))
    assert "elastic-resnet" in result.stdout
