"""Volcano 1.15's SchedulingGatesQueueAdmission on the real control plane (the cluster's webhook
runs with the gate on): a pod that opts in is created gated; while its queue has no room it waits
gated, never `PodScheduled: False` (what autoscalers read as "add a node"); once its gang is in
the queue the node agent lifts the gate, as Volcano's scheduler does, and the pod runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcluster.running import LocalCluster
from shared.labels import QUEUE_ALLOCATION_GATE_KEY
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e

WAIT = 120.0


def gated_job(name: str, queue: str) -> dict[str, Any]:
    """One pod of one CPU that opts in to the queue allocation gate."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "metadata": {"annotations": {QUEUE_ALLOCATION_GATE_KEY: "true"}},
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


def pod(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    found = cluster.kubectl("get", "pod", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(found.stdout) if found.returncode == 0 else None


def gates(pod: dict[str, Any]) -> list[str]:
    return [g["name"] for g in pod["spec"].get("schedulingGates") or []]


def scheduled_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodScheduled"), None)


def podgroup_conditions(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    groups = json.loads(
        cluster.kubectl(
            "get", "podgroups.scheduling.volcano.sh", "-n", namespace, "-o", "json"
        ).stdout
    )["items"]
    return [c for g in groups for c in (g.get("status") or {}).get("conditions") or []]


def bare_pod(queue: str) -> dict[str, Any]:
    """A pod of the gang scheduler in `queue`, one CPU, opted in to the gate."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "waiter",
            "annotations": {
                QUEUE_ALLOCATION_GATE_KEY: "true",
                "scheduling.volcano.sh/queue-name": queue,
            },
        },
        "spec": {
            "schedulerName": "volcano",
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }


def dry_run(cluster: LocalCluster, namespace: str, manifest: str) -> int:
    done = cluster.kubectl(
        "create", "-n", namespace, "-f", "-", "--dry-run=server", input=manifest, check=False
    )
    return done.returncode


def test_a_pod_waits_gated_for_its_queue_then_runs(cluster: LocalCluster, namespace: str) -> None:
    queue = f"gate-{namespace}"
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
    try:
        probe = json.dumps(gated_job("probe", queue))
        wait_for(
            lambda: dry_run(cluster, namespace, probe),
            lambda code: code == 0,
            "the webhook to see the queue Open",
            WAIT,
        )
        cluster.kubectl(
            "create", "-n", namespace, "-f", "-", input=json.dumps(gated_job("first", queue))
        )
        first = wait_for(
            lambda: pod(cluster, namespace, "first-main-0"),
            lambda p: p is not None and (p.get("status") or {}).get("phase") == "Running",
            "the first pod to run once its gate is lifted",
            WAIT,
        )
        assert first is not None and gates(first) == []

        # The queue's one CPU is taken. A Volcano Job's pods are only created once its gang is
        # in the queue; a bare pod of the gang scheduler (its PodGroup made by the PodGroup
        # controller) exists before: it is created gated and stays so, never Unschedulable.
        cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(bare_pod(queue)))
        wait_for(
            lambda: podgroup_conditions(cluster, namespace),
            lambda conditions: any(
                c.get("type") == "Unschedulable" and queue in c.get("message", "")
                for c in conditions
            ),
            "the scheduler to refuse the bare pod's gang for its queue",
            WAIT,
        )
        waiting = pod(cluster, namespace, "waiter")
        assert waiting is not None
        assert gates(waiting) == [QUEUE_ALLOCATION_GATE_KEY]
        # kube-apiserver itself says SchedulingGated; nobody wrote Unschedulable.
        condition = scheduled_condition(waiting)
        assert condition is None or condition.get("reason") == "SchedulingGated", condition

        # Room again: the gate is lifted and the pod runs.
        cluster.kubectl("delete", "vcjob", "first", "-n", namespace)
        running = wait_for(
            lambda: pod(cluster, namespace, "waiter"),
            lambda p: p is not None and (p.get("status") or {}).get("phase") == "Running",
            "the bare pod to run once the queue has room",
            WAIT,
        )
        assert running is not None and gates(running) == []
    finally:
        cluster.kubectl(
            "delete", "vcjob,pods", "--all", "-n", namespace, "--wait=true", check=False
        )
        cluster.kubectl("delete", "queue", queue, "--wait=false", check=False)


def test_a_pod_that_does_not_opt_in_is_not_gated(cluster: LocalCluster, namespace: str) -> None:
    plain = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plain"},
        "spec": {
            "schedulerName": "nobody",
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }
    created = json.loads(
        cluster.kubectl(
            "create", "-n", namespace, "-f", "-", "-o", "json", input=json.dumps(plain)
        ).stdout
    )
    assert gates(created) == []
    opted = {
        **plain,
        "metadata": {"name": "opted", "annotations": {QUEUE_ALLOCATION_GATE_KEY: "true"}},
    }
    created = json.loads(
        cluster.kubectl(
            "create", "-n", namespace, "-f", "-", "-o", "json", input=json.dumps(opted)
        ).stdout
    )
    # No scheduler of that name: the gate added at creation stays.
    assert gates(created) == [QUEUE_ALLOCATION_GATE_KEY]
