"""The lifecycle extensions on the real control plane: the run deadline (suspended time
excluded), evictions charged to the infrastructure budget with growing backoff, and blocked
jobs naming their reason on the Job, in `kubectl get`, and in `vcjob job why`."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as kube_client

from localcluster.running import LocalCluster, tools_env
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
WAIT = 90.0


def manifest(name: str, *, replicas: int = 1, cpu: str = "100m", **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "minAvailable": replicas,
                "schedulerName": "volcano",
                "tasks": [
                    {
                        "name": "w",
                        "replicas": replicas,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "main",
                                        "image": "busybox",
                                        "resources": {"requests": {"cpu": cpu}},
                                    }
                                ],
                            }
                        },
                    }
                ],
                **spec,
            },
        }
    )


def create(cluster: LocalCluster, namespace: str, body: str) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=body)


def job(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    out = cluster.kubectl("get", "vcjob", name, "-n", namespace, "-o", "json").stdout
    parsed: dict[str, Any] = json.loads(out)
    return parsed


def status(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(job(cluster, namespace, name).get("status") or {})


def phase(cluster: LocalCluster, namespace: str, name: str) -> str | None:
    return (status(cluster, namespace, name).get("state") or {}).get("phase")


def pods(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    out = cluster.kubectl(
        "get", "pods", "-n", namespace, "-l", f"volcano.sh/job-name={name}", "-o", "json"
    ).stdout
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


def when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def script(cluster: LocalCluster, *argv: str) -> subprocess.CompletedProcess[str]:
    """A console script (`vcjob …`, `kubectl vcjob …`) as a user runs it."""
    env = tools_env()
    env["PATH"] = f"{env['PATH']}{os.pathsep}{BIN}"
    env["KUBECONFIG"] = str(cluster.kubeconfig)
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=60, env=env, check=False
    )


def running_pod(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = wait_for(
        lambda: [
            p
            for p in pods(cluster, namespace, name)
            if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
        ],
        bool,
        f"a running pod of {name}",
        timeout=WAIT,
    )
    return found[0]


def test_the_deadline_fails_a_running_job_and_skips_suspended_time(
    cluster: LocalCluster, namespace: str
) -> None:
    create(cluster, namespace, manifest("late", activeDeadlineSeconds=20))
    wait_for(lambda: phase(cluster, namespace, "late"), lambda p: p == "Running", "Running", WAIT)
    # Once the job ran, its deadline may only come closer.
    raised = cluster.kubectl(
        "patch", "vcjob", "late", "-n", namespace, "--type", "merge",
        "-p", '{"spec": {"activeDeadlineSeconds": 600}}', check=False,
    )  # fmt: skip
    assert raised.returncode != 0
    assert (
        "spec.activeDeadlineSeconds: Invalid value: 600: may only be lowered once the job ran"
        in raised.stderr
    ), raised.stderr
    suspended = script(cluster, "vcjob", "job", "suspend", "-N", "late", "-n", namespace)
    assert suspended.returncode == 0, suspended.stderr
    wait_for(lambda: phase(cluster, namespace, "late"), lambda p: p == "Aborted", "Aborted", WAIT)
    # Suspended for longer than the whole deadline: the job must stay Aborted, not fail.
    until = time.monotonic() + 25
    while time.monotonic() < until:
        assert phase(cluster, namespace, "late") == "Aborted"
        time.sleep(1)
    resumed = script(cluster, "vcjob", "job", "resume", "-N", "late", "-n", namespace)
    assert resumed.returncode == 0, resumed.stderr
    wait_for(lambda: phase(cluster, namespace, "late"), lambda p: p == "Running", "Running again")
    final = wait_for(
        lambda: status(cluster, namespace, "late"),
        lambda s: (s.get("state") or {}).get("phase") == "Failed",
        "the deadline to fail the job",
        WAIT,
    )
    assert final["state"]["reason"] == "DeadlineExceeded"
    assert final["reason"] == "DeadlineExceeded"
    failed = next(c for c in final["typedConditions"] if c["type"] == "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "DeadlineExceeded")
    # The right time: 20 s of running, the suspension (>= 25 s) not counted.
    assert final["suspendedSeconds"] >= 25
    active = (when(final["state"]["lastTransitionTime"]) - when(final["startTime"])).total_seconds()
    active -= final["suspendedSeconds"]
    assert 19 <= active <= 30, final
    wait_for(lambda: pods(cluster, namespace, "late"), lambda p: not p, "the pods to be deleted")
    events = cluster.kubectl(
        "get",
        "events",
        "-n",
        namespace,
        "--field-selector",
        "reason=DeadlineExceeded",
        "-o",
        "json",
    ).stdout
    assert json.loads(events)["items"], "a DeadlineExceeded event on the job"


def test_evictions_use_the_infrastructure_budget_with_growing_backoff(
    cluster: LocalCluster, namespace: str
) -> None:
    body = manifest(
        "hardy",
        maxRetry=1,
        policies=[{"event": "PodEvicted", "action": "RestartJob"}],
        retryPolicy={"infrastructureRetries": 5, "backoff": {"baseSeconds": 1, "capSeconds": 8}},
    )
    create(cluster, namespace, body)
    core = kube_client.CoreV1Api(cluster.api_client())
    for n in range(1, 6):
        pod = running_pod(cluster, namespace, "hardy")
        assert pod["metadata"]["annotations"]["batch.vcjob.io/attempt"] == str(n - 1)
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod["metadata"]["name"], "namespace": namespace},
        }
        core.create_namespaced_pod_eviction(pod["metadata"]["name"], namespace, eviction)
        wait_for(
            lambda: status(cluster, namespace, "hardy").get("restartCounts") or {},
            lambda counts, n=n: counts.get("infrastructure") == n,  # type: ignore[misc]
            f"eviction {n} to be counted",
            WAIT,
        )
    pod = running_pod(cluster, namespace, "hardy")
    final = wait_for(
        lambda: status(cluster, namespace, "hardy"),
        lambda s: (s.get("state") or {}).get("phase") == "Running",
        "the job running after five evictions",
        WAIT,
    )
    # maxRetry 1 would have failed the job at the first eviction under Volcano.
    assert final["retryCount"] == 0
    assert final["restartCounts"] == {"application": 0, "infrastructure": 5, "operator": 0}
    assert pod["metadata"]["annotations"]["batch.vcjob.io/attempt"] == "5"
    env = pod["spec"]["containers"][0]["env"]
    assert {"name": "VCJOB_ATTEMPT", "value": "5"} in env
    history = final["attempts"]
    assert [a["index"] for a in history] == [0, 1, 2, 3, 4, 5]
    assert [a.get("cause") for a in history[:5]] == ["Infrastructure"] * 5
    backoffs = [a["backoffSeconds"] for a in history[:5]]
    assert backoffs[:4] == sorted(backoffs[:4]) and len(set(backoffs[:4])) == 4, backoffs
    for ended, started in itertools.pairwise(history):
        gap = (when(started["startTime"]) - when(ended["endTime"])).total_seconds()
        # Times are whole seconds: the gap may read up to a second short.
        assert gap >= ended["backoffSeconds"] - 1, (ended, started)


def test_blocked_jobs_name_their_reason(cluster: LocalCluster, namespace: str) -> None:
    queue = f"tight-{namespace}"
    cluster.kubectl(
        "create",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": queue},
                "spec": {"weight": 1, "capability": {"cpu": "1"}},
            }
        ),
    )
    wait_for(
        lambda: (
            json.loads(cluster.kubectl("get", "queue", queue, "-o", "json").stdout).get("status")
            or {}
        ).get("state"),
        lambda s: s == "Open",
        "the queue to open",
    )
    create(cluster, namespace, manifest("queued", cpu="2", queue=queue))
    create(
        cluster,
        namespace,
        manifest("nodisk", volumes=[{"mountPath": "/data", "volumeClaimName": "absent"}]),
    )
    create(cluster, namespace, manifest("huge", replicas=2, cpu="1000"))
    # Not admitted by its queue's capability yet; then the queue closes.
    wait_for(
        lambda: status(cluster, namespace, "queued").get("reason"),
        lambda r: r == "Unschedulable",
        "queued: not admitted",
        WAIT,
    )
    closed = script(cluster, "vcjob", "queue", "operate", "-n", queue, "-a", "close")
    assert closed.returncode == 0, closed.stderr

    expected = {
        "queued": ("QueueClosed", f"open the queue: vcjob queue operate -n {queue} -a open"),
        "nodisk": ("MissingPVC", "create the PersistentVolumeClaim"),
        "huge": ("Unschedulable", "ask for less per pod (requests)"),
    }
    for name, (reason, hint) in expected.items():
        st = wait_for(
            lambda name=name: status(cluster, namespace, name),  # type: ignore[misc]
            lambda s, reason=reason: s.get("reason") == reason,  # type: ignore[misc]
            f"{name} to show {reason}",
            WAIT,
        )
        assert st["state"]["phase"] == "Pending"
        blocked = next(c for c in st["typedConditions"] if c["type"] == "Blocked")
        assert (blocked["status"], blocked["reason"]) == ("True", reason)
        why = script(cluster, "vcjob", "job", "why", name, "-n", namespace)
        assert why.returncode == 0, why.stderr
        lines = why.stdout.splitlines()
        assert lines[0] == f"Job {namespace}/{name}: Pending", why.stdout
        assert lines[1].startswith(f"  Reason:   {reason}: "), why.stdout
        assert lines[-1].startswith(f"To unblock: {hint}"), why.stdout
    listed = cluster.kubectl("get", "vcjob", "-n", namespace).stdout.splitlines()
    assert listed[0].split()[-1] == "REASON"
    rows = {line.split()[0]: line.split()[-1] for line in listed[1:]}
    assert rows == {name: reason for name, (reason, _) in expected.items()}
    # The same through kubectl's plugin mechanism, with the scheduler's word for the huge job:
    # its pods are larger than any node, so more nodes would not help.
    plugin = script(cluster, "kubectl", "vcjob", "job", "why", "huge", "-n", namespace)
    assert plugin.returncode == 0, plugin.stderr
    assert plugin.stdout.splitlines()[1] == (
        "  Reason:   Unschedulable: the gang's 2 pods request cpu 2000 in all, one of them at "
        "least 1000, but the largest node has 8 allocatable: no node can run it"
    ), plugin.stdout
    assert "Queue default: Open" in plugin.stdout
    missing = [
        line
        for line in script(
            cluster, "vcjob", "job", "why", "nodisk", "-n", namespace
        ).stdout.splitlines()
        if "absent" in line
    ]
    assert missing, "the missing PVC is named"


def test_a_pod_larger_than_every_node_is_named_by_why(
    cluster: LocalCluster, namespace: str
) -> None:
    """12 cpu fit the cluster's two 8-cpu nodes together, so the gang is admitted and its pod
    created; no node can take the pod, and `vcjob job why` says so, not "Insufficient cpu"."""
    create(cluster, namespace, manifest("wide", cpu="12"))
    expected = (
        "  Unschedulable: pod wide-w-0 requests cpu 12 but the largest node has 8 allocatable: "
        "no node can run it"
    )
    why = wait_for(
        lambda: script(cluster, "vcjob", "job", "why", "wide", "-n", namespace),
        lambda result: expected in result.stdout.splitlines(),
        "vcjob job why to name the pod no node can run",
        WAIT,
        interval=2,
    )
    assert why.returncode == 0, why.stderr
    assert why.stdout.splitlines()[0] == f"Job {namespace}/wide: Pending", why.stdout
    (pod,) = pods(cluster, namespace, "wide")
    assert not pod["spec"].get("nodeName")
