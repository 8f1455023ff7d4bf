"""vcjob Jobs queued by the real Kueue manager (Job.v1alpha1.batch.volcano.sh among Kueue's
externalFrameworks): quota for one job at a time, admission order, preemption by priority."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localcluster.running import LocalCluster, tools_env
from shared import labels
from tests.support import polling
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e

WAIT = 120.0


def suspended_message(cluster: LocalCluster, namespace: str, name: str) -> str:
    return str((suspended(cluster, namespace, name) or {}).get("message") or "")


def manifest(name: str, runtime: str, priority_class: str | None = None) -> str:
    """Two pods of one cpu each: the ClusterQueue's whole quota."""
    spec: dict[str, Any] = {
        "minAvailable": 2,
        "maxRetry": 2,
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {
                    "metadata": {"annotations": {labels.SIM_RUNTIME_KEY: runtime}},
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
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return json.dumps(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {labels.KUEUE_QUEUE_NAME_KEY: "lq"}},
            "spec": spec,
        }
    )


def get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def job(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = get(cluster, "vcjob", name, "-n", namespace)
    return found


def phase(cluster: LocalCluster, namespace: str, name: str) -> str | None:
    return ((job(cluster, namespace, name).get("status") or {}).get("state") or {}).get("phase")


def suspended(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The Suspended condition when it is True, else None."""
    for condition in (job(cluster, namespace, name).get("status") or {}).get(
        "typedConditions"
    ) or []:
        if condition.get("type") == "Suspended" and condition.get("status") == "True":
            return dict(condition)
    return None


def running_pods(cluster: LocalCluster, namespace: str, name: str) -> int:
    pods = get(cluster, "pods", "-n", namespace, "-l", f"{labels.JOB_NAME_KEY}={name}")["items"]
    return sum(1 for p in pods if p["status"].get("phase") == "Running")


def pods_of(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    selector = f"{labels.JOB_NAME_KEY}={name}"
    items: list[dict[str, Any]] = get(cluster, "pods", "-n", namespace, "-l", selector)["items"]
    return items


def workload_of(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    for workload in get(cluster, "workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "Job" and o["name"] == name for o in owners):
            return dict(workload)
    return None


def workload_condition(workload: dict[str, Any] | None, type_: str) -> bool:
    conditions = ((workload or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == type_ and c["status"] == "True" for c in conditions)


def runs(cluster: LocalCluster, namespace: str, name: str) -> bool:
    return phase(cluster, namespace, name) == "Running" and (
        running_pods(cluster, namespace, name) == 2
    )


def vcjob_view(cluster: LocalCluster, namespace: str, name: str) -> str:
    env = tools_env()
    env["PATH"] = f"{env['PATH']}{os.pathsep}{Path(sys.executable).parent}"
    env["KUBECONFIG"] = str(cluster.kubeconfig)
    shown = subprocess.run(
        ["vcjob", "job", "view", "-N", name, "-n", namespace],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    return shown.stdout


def test_kueue_admits_one_job_at_a_time_and_preempts_by_priority(
    cluster: LocalCluster, namespace: str
) -> None:
    create = ("create", "-n", namespace, "-f", "-")
    cluster.kubectl(*create, input=manifest("first", runtime="45s"))
    wait_until("first runs", lambda: runs(cluster, namespace, "first"), WAIT)
    first = job(cluster, namespace, "first")
    assert first["spec"]["suspend"] is False  # created suspended by the webhook, then admitted

    cluster.kubectl(*create, input=manifest("second", runtime="600s"))
    reason = polling.wait_for(
        lambda: suspended_message(cluster, namespace, "second"),
        lambda message: "insufficient unused quota" in message,
        "second waiting for quota with Kueue's reason",
        timeout=WAIT,
    )
    assert "queued by Kueue in LocalQueue lq" in reason
    assert job(cluster, namespace, "second")["spec"]["suspend"] is True
    assert pods_of(cluster, namespace, "second") == []
    assert runs(cluster, namespace, "first")  # the quota holder was not disturbed
    wide = cluster.kubectl("get", "vcjob", "second", "-n", namespace, "-o", "wide").stdout
    assert wide.splitlines()[0].split()[-1] == "SUSPENDED"
    assert wide.splitlines()[1].split()[-1] == "true"
    assert "insufficient unused quota" in vcjob_view(cluster, namespace, "second")

    # The first one finishes: its Workload is Finished, the quota goes to the second.
    wait_until("first Completed", lambda: phase(cluster, namespace, "first") == "Completed", WAIT)
    wait_until(
        "first's Workload Finished",
        lambda: workload_condition(workload_of(cluster, namespace, "first"), "Finished"),
        WAIT,
    )
    wait_until("second runs", lambda: runs(cluster, namespace, "second"), WAIT)
    assert suspended(cluster, namespace, "second") is None
    before = job(cluster, namespace, "second")["status"]

    # A job of a higher priority preempts it: suspended, its pods deleted, no retry burnt.
    cluster.kubectl(
        *create, input=manifest("urgent", runtime="30s", priority_class="kueue-e2e-high")
    )
    wait_until(
        "second preempted: suspended, its pods gone",
        lambda: (
            suspended(cluster, namespace, "second") is not None
            and not pods_of(cluster, namespace, "second")
        ),
        WAIT,
    )
    message = suspended_message(cluster, namespace, "second")
    assert "evicted by Kueue: Preempted" in message or "queued by Kueue" in message, message
    wait_until("urgent runs", lambda: runs(cluster, namespace, "urgent"), WAIT)
    evicted = workload_of(cluster, namespace, "second")
    assert evicted is not None and not workload_condition(evicted, "Admitted")

    # The urgent one finishes; the second is admitted again and resumes its attempt.
    wait_until("urgent Completed", lambda: phase(cluster, namespace, "urgent") == "Completed", WAIT)
    wait_until("second runs again", lambda: runs(cluster, namespace, "second"), WAIT)
    after = job(cluster, namespace, "second")["status"]
    assert (after["retryCount"], after["version"]) == (before["retryCount"], before["version"])
    assert after["retryCount"] == 0

    # Deleting the job deletes its Workload (owner reference, garbage collector).
    cluster.kubectl("delete", "vcjob", "second", "-n", namespace, "--wait=false")
    wait_until(
        "second's Workload deleted",
        lambda: workload_of(cluster, namespace, "second") is None,
        WAIT,
    )


def test_a_job_without_the_queue_label_is_not_queued(cluster: LocalCluster, namespace: str) -> None:
    plain = json.loads(manifest("plain", runtime="600s"))
    plain["metadata"]["labels"] = {}
    plain["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {}
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(plain))
    wait_until("plain runs", lambda: runs(cluster, namespace, "plain"), WAIT)
    assert "suspend" not in job(cluster, namespace, "plain")["spec"]
    assert workload_of(cluster, namespace, "plain") is None
