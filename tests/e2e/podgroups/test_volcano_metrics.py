"""Volcano's metric names on the controller's /metrics, on the real control plane: the queue's
PodGroup counts and a Job's completed-phase counter."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest

from localcluster.running import LocalCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e

WAIT = 120.0


def job(name: str, runtime: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "metadata": {"annotations": {"sim.vcjob.io/runtime": runtime}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ],
                        },
                    },
                }
            ],
        },
    }


def scrape(cluster: LocalCluster) -> str:
    port = cluster.state["components"]["controller"]["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text: str = response.read().decode()
    return text


def sample(text: str, name: str, labels: str) -> float | None:
    match = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def test_volcano_queue_and_job_metrics(cluster: LocalCluster, namespace: str) -> None:
    for name, runtime in (("long", "600s"), ("short", "1s")):
        cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(job(name, runtime)))
    completed = f'job_name="{namespace}/short",queue_name="default"'
    text = wait_for(
        lambda: scrape(cluster),
        lambda t: sample(t, "volcano_job_completed_phase_count", completed) == 1.0,
        "the completed job to be counted",
        WAIT,
    )
    text = wait_for(
        lambda: scrape(cluster),
        lambda t: (
            (sample(t, "volcano_queue_pod_group_running_count", 'queue_name="default"') or 0) >= 1
        ),
        "the running PodGroup to be counted in its queue",
        WAIT,
    )
    for phase in ("pending", "inqueue", "unknown", "completed"):
        value = sample(text, f"volcano_queue_pod_group_{phase}_count", 'queue_name="default"')
        assert value is not None, phase
    assert sample(text, "volcano_queue_weight", 'queue_name="default"') is not None
    assert re.search(r"^volcano_unschedule_job_count \S+$", text, re.MULTILINE)
    # Volcano 1.15's histogram: one observation per pod created, from the two creation times.
    latency = "volcano_controller_job_to_pod_creation_latency_milliseconds"
    pods = len(
        json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
    )
    observed = re.search(rf"^{latency}_count (\S+)$", text, re.MULTILINE)
    assert observed is not None and float(observed.group(1)) >= pods >= 2
    # Volcano's buckets: 30 from 50 ms to a minute, and +Inf.
    assert len(re.findall(rf"^{latency}_bucket\{{", text, re.MULTILINE)) == 31
    assert sample(text, f"{latency}_bucket", 'le="50.0"') is not None
    # Ours stay beside them.
    assert "controller_runtime_reconcile_total" in text
    state = json.loads(
        cluster.kubectl("get", "vcjob", "short", "-n", namespace, "-o", "json").stdout
    )["status"]["state"]
    assert state["phase"] == "Completed"
