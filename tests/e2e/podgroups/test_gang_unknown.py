"""Volcano's jobseq error handling on the real control plane: a running gang that loses half of
its pods while every node is tainted (nothing can take the replacements) goes Unknown, with the
Unschedulable condition and event, and the Job's `Unknown` policy restarts or aborts it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as kube_client
from kubernetes import watch

from localcluster.running import LocalCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e

WAIT = 120.0
TAINT = "unschedulable-taint-key=unschedulable-taint-val:NoSchedule"


def gang_job(name: str, action: str) -> dict[str, Any]:
    """Four pods of 4 CPUs: the two 8-CPU nodes are full."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": 4,
            "policies": [{"event": "Unknown", "action": action}],
            "tasks": [
                {
                    "name": "test",
                    "replicas": 4,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "4"}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


def job_status(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    out = cluster.kubectl("get", "vcjob", name, "-n", namespace, "-o", "json").stdout
    status: dict[str, Any] = json.loads(out).get("status") or {}
    return status


def phase(status: dict[str, Any]) -> str:
    return str((status.get("state") or {}).get("phase") or "")


class PodGroupPhases:
    """Every (PodGroup, phase, Unschedulable condition message) a watch of the namespace sees."""

    def __init__(self, cluster: LocalCluster, namespace: str) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self._watch = watch.Watch()
        self._stopping = threading.Event()
        api = kube_client.CustomObjectsApi(cluster.api_client())
        self._thread = threading.Thread(
            target=self._run, args=(api, namespace), daemon=True, name="podgroup-watch"
        )
        self._thread.start()

    def _run(self, api: kube_client.CustomObjectsApi, namespace: str) -> None:
        try:
            self._follow(api, namespace)
        except Exception:
            if not self._stopping.is_set():
                raise  # the connection broke while the test still looks: it fails

    def _follow(self, api: kube_client.CustomObjectsApi, namespace: str) -> None:
        stream = self._watch.stream(
            api.list_namespaced_custom_object,
            "scheduling.volcano.sh",
            "v1beta1",
            namespace,
            "podgroups",
            timeout_seconds=int(WAIT * 3),
        )
        for event in stream:
            group = event["object"]
            status = group.get("status") or {}
            message = next(
                (
                    str(c.get("message") or "")
                    for c in status.get("conditions") or []
                    if c.get("type") == "Unschedulable" and c.get("status") == "True"
                ),
                "",
            )
            self.seen.append((group["metadata"]["name"], str(status.get("phase") or ""), message))

    def unknown(self) -> list[tuple[str, str, str]]:
        return [s for s in list(self.seen) if s[1] == "Unknown"]

    def stop(self) -> None:
        self._stopping.set()
        self._watch.stop()


@pytest.fixture
def tainted(cluster: LocalCluster) -> Iterator[None]:
    """Every node tainted NoSchedule for the test's second half (the taint goes afterwards)."""
    yield
    cluster.kubectl("taint", "nodes", "--all", f"{TAINT.split('=')[0]}-", check=False)


def break_the_gang(cluster: LocalCluster, namespace: str, name: str) -> None:
    """Taint every node, then delete half of the running gang's pods."""
    cluster.kubectl("taint", "nodes", "--all", TAINT, "--overwrite")
    for index in (0, 1):
        cluster.kubectl("delete", "pod", f"{name}-test-{index}", "-n", namespace, "--wait=false")


def unschedulable_events(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    out = cluster.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.kind=PodGroup",
        "-o", "json",
    ).stdout  # fmt: skip
    return [e for e in json.loads(out)["items"] if e.get("reason") == "Unschedulable"]


def test_half_of_a_running_gang_deleted_goes_unknown_and_the_job_restarts(
    cluster: LocalCluster, namespace: str, tainted: None
) -> None:
    name = "restart-when-unknown"
    cluster.kubectl(
        "create", "-n", namespace, "-f", "-", input=json.dumps(gang_job(name, "RestartJob"))
    )
    wait_for(
        lambda: job_status(cluster, namespace, name),
        lambda s: phase(s) == "Running",
        "the gang to run",
        WAIT,
    )
    phases = PodGroupPhases(cluster, namespace)
    try:
        break_the_gang(cluster, namespace, name)
        unknown = wait_for(phases.unknown, bool, "the PodGroup to go Unknown", WAIT)
        assert "tasks in gang unschedulable" in unknown[0][2]
        status = wait_for(
            lambda: job_status(cluster, namespace, name),
            lambda s: (s.get("retryCount") or 0) >= 1 and phase(s) in ("Restarting", "Pending"),
            "the job to restart",
            WAIT,
        )
        assert status["retryCount"] == 1
    finally:
        phases.stop()
    # The scheduler posts the event after the PodGroup's status: wait for it, not just read.
    wait_for(
        lambda: unschedulable_events(cluster, namespace),
        bool,
        "the PodGroup's Unschedulable event",
        WAIT,
    )

    cluster.kubectl("taint", "nodes", "--all", f"{TAINT.split('=')[0]}-")
    wait_for(
        lambda: job_status(cluster, namespace, name),
        lambda s: phase(s) == "Running",
        "the job to run again",
        WAIT,
    )


def test_a_gang_unknown_with_an_abort_policy_is_aborted(
    cluster: LocalCluster, namespace: str, tainted: None
) -> None:
    name = "abort-when-unknown"
    cluster.kubectl(
        "create", "-n", namespace, "-f", "-", input=json.dumps(gang_job(name, "AbortJob"))
    )
    wait_for(
        lambda: job_status(cluster, namespace, name),
        lambda s: phase(s) == "Running",
        "the gang to run",
        WAIT,
    )
    break_the_gang(cluster, namespace, name)
    wait_for(
        lambda: job_status(cluster, namespace, name),
        lambda s: phase(s) == "Aborted",
        "the job to be aborted",
        WAIT,
    )
