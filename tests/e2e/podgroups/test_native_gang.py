"""Kubernetes' own gang scheduling (1.37) with the real kube-scheduler: Volcano Jobs with
`schedulerName: default-scheduler` get a scheduling.k8s.io Workload and PodGroup, their pods join
it, and kube-scheduler places each gang all-or-nothing (the cluster's two nodes have 8 CPUs each;
the node agent binds no default-scheduler pod)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localcluster import controlplane, kubebin
from localcluster.running import LocalCluster, tools_env
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e
# The gang API is served from Kubernetes 1.37 (the pinned release); on older releases (the manual
# lane of docs/kubernetes-versions.md) the Jobs run without it and say so.
SERVED = bool(controlplane.kubernetes_features(kubebin.KUBERNETES_VERSION).runtime_config)
needs_the_api = pytest.mark.skipif(
    not SERVED, reason=f"Kubernetes {kubebin.KUBERNETES_VERSION} does not serve the gang API"
)

WAIT = 120.0
BIN = Path(sys.executable).parent


def gang_job(
    name: str, replicas: int, cpu: str, runtime: str, *, min_available: int | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "default-scheduler",
            "minAvailable": replicas if min_available is None else min_available,
            "tasks": [
                {
                    "name": "w",
                    "replicas": replicas,
                    "template": {
                        "metadata": {"annotations": {"sim.vcjob.io/runtime": runtime}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": cpu}},
                                }
                            ],
                        },
                    },
                }
            ],
        },
    }


def items(cluster: LocalCluster, namespace: str, resource: str) -> list[dict[str, Any]]:
    listed = cluster.kubectl("get", resource, "-n", namespace, "-o", "json")
    return list(json.loads(listed.stdout)["items"])


def pods_of(cluster: LocalCluster, namespace: str, job: str) -> list[dict[str, Any]]:
    return [
        p
        for p in items(cluster, namespace, "pods")
        if p["metadata"]["labels"].get("volcano.sh/job-name") == job
    ]


def bound(pods: list[dict[str, Any]]) -> int:
    return sum(1 for p in pods if p["spec"].get("nodeName"))


def phase(cluster: LocalCluster, namespace: str, job: str) -> str:
    got = cluster.kubectl("get", "vcjob", job, "-n", namespace, "-o", "json")
    return str(((json.loads(got.stdout).get("status") or {}).get("state") or {}).get("phase"))


def create(cluster: LocalCluster, namespace: str, job: dict[str, Any]) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(job))


def vcjob(cluster: LocalCluster, *argv: str) -> str:
    env = tools_env()
    env["PATH"] = f"{env['PATH']}{os.pathsep}{BIN}"
    env["KUBECONFIG"] = str(cluster.kubeconfig)
    done = subprocess.run(
        ["vcjob", *argv], capture_output=True, text=True, timeout=60, env=env, check=True
    )
    return done.stdout


@needs_the_api
def test_two_gangs_that_do_not_both_fit_run_one_after_the_other(
    cluster: LocalCluster, namespace: str
) -> None:
    # Each gang needs both nodes (two pods of 6 CPUs); pod by pod, kube-scheduler would give
    # each job one node and neither could run.
    create(cluster, namespace, gang_job("first", 2, "6", "25s"))
    create(cluster, namespace, gang_job("second", 2, "6", "25s"))
    groups = wait_for(
        lambda: items(cluster, namespace, "podgroups.scheduling.k8s.io"),
        lambda found: len(found) == 2,
        "a native PodGroup per job",
        WAIT,
    )
    workloads = items(cluster, namespace, "workloads.scheduling.k8s.io")
    assert [w["spec"]["podGroupTemplates"][0]["schedulingPolicy"] for w in workloads] == [
        {"gang": {"minCount": 2}}
    ] * 2
    names = {g["metadata"]["ownerReferences"][0]["name"]: g["metadata"]["name"] for g in groups}

    def placement() -> tuple[int, int]:
        return bound(pods_of(cluster, namespace, "first")), bound(
            pods_of(cluster, namespace, "second")
        )

    running = wait_for(placement, lambda counts: 2 in counts, "one gang placed whole", WAIT)
    assert sorted(running) == [0, 2], f"a partial placement: {running}"
    winner, waiter = ("first", "second") if running[0] == 2 else ("second", "first")
    for pod in pods_of(cluster, namespace, winner):
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": names[winner]}
    # The other gang waits whole, with kube-scheduler's reason on its PodGroup, until the nodes
    # are free again; then it runs whole.
    waiting = wait_for(
        lambda: items(cluster, namespace, "podgroups.scheduling.k8s.io"),
        lambda found: any(
            c.get("type") == "PodGroupInitiallyScheduled" and c.get("status") == "False"
            for g in found
            if g["metadata"]["name"] == names[waiter]
            for c in (g.get("status") or {}).get("conditions") or []
        ),
        "kube-scheduler's verdict on the waiting gang",
        WAIT,
    )
    assert waiting

    def winner_phase() -> str:
        # Until the winner is done, the waiting gang has no pod bound: no partial placement.
        assert bound(pods_of(cluster, namespace, waiter)) == 0, "a partial placement"
        return phase(cluster, namespace, winner)

    finished = wait_for(
        winner_phase,
        lambda found: found in ("Completed", "Failed"),
        f"{winner} to finish",
        WAIT,
        0.5,
    )
    assert finished == "Completed"
    wait_for(
        lambda: phase(cluster, namespace, waiter),
        lambda found: found == "Completed",
        f"{waiter} to run whole once the nodes are free",
        WAIT,
    )


@needs_the_api
def test_a_gang_larger_than_the_cluster_waits_with_kube_schedulers_reason(
    cluster: LocalCluster, namespace: str
) -> None:
    create(cluster, namespace, gang_job("huge", 3, "6", "10s"))
    wait_for(
        lambda: vcjob(cluster, "job", "why", "huge", "-n", namespace),
        lambda text: "(kube-scheduler): minCount 3, not placed: Unschedulable" in text,
        "`vcjob job why` to give kube-scheduler's reason",
        WAIT,
    )
    assert bound(pods_of(cluster, namespace, "huge")) == 0
    assert phase(cluster, namespace, "huge") == "Pending"


@needs_the_api
def test_a_scale_resizes_the_one_gang(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, namespace, gang_job("grow", 2, "1", "600s"))
    wait_for(
        lambda: phase(cluster, namespace, "grow"), lambda p: p == "Running", "grow running", WAIT
    )
    cluster.kubectl(
        "patch", "vcjob", "grow", "-n", namespace, "--type", "json", "-p",
        json.dumps(
            [
                {"op": "replace", "path": "/spec/tasks/0/replicas", "value": 3},
                {"op": "replace", "path": "/spec/minAvailable", "value": 3},
            ]
        ),
    )  # fmt: skip
    groups = wait_for(
        lambda: items(cluster, namespace, "podgroups.scheduling.k8s.io"),
        lambda found: [g["spec"]["schedulingPolicy"] for g in found] == [{"gang": {"minCount": 3}}],
        "the one native PodGroup resized to 3",
        WAIT,
    )
    wait_for(
        lambda: bound(pods_of(cluster, namespace, "grow")),
        lambda n: n == 3,
        "the third pod placed in the same gang",
        WAIT,
    )
    third = next(
        p for p in pods_of(cluster, namespace, "grow") if p["metadata"]["name"] == "grow-w-2"
    )
    assert third["spec"]["schedulingGroup"] == {"podGroupName": groups[0]["metadata"]["name"]}


@pytest.mark.skipif(SERVED, reason="the cluster serves the gang API")
def test_without_the_api_the_job_runs_and_says_why(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, namespace, gang_job("plain", 2, "1", "2s"))
    wait_for(
        lambda: phase(cluster, namespace, "plain"),
        lambda found: found == "Completed",
        "the Job to run without a gang",
        WAIT,
    )
    events = items(cluster, namespace, "events")
    assert any(e.get("reason") == "NativeGangUnavailable" for e in events), events


@needs_the_api
def test_a_higher_priority_gang_preempts_a_lower_one_whose_policy_applies(
    cluster: LocalCluster, namespace: str
) -> None:
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, "100"), (high, "1000")):
        cluster.kubectl("create", "priorityclass", name, f"--value={value}")
    try:
        victim = gang_job("victim", 2, "6", "600s")
        victim["spec"]["priorityClassName"] = low
        victim["spec"]["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}]
        create(cluster, namespace, victim)
        wait_for(
            lambda: phase(cluster, namespace, "victim"),
            lambda p: p == "Running",
            "the low-priority gang running",
            WAIT,
        )
        urgent = gang_job("urgent", 2, "6", "20s")
        urgent["spec"]["priorityClassName"] = high
        create(cluster, namespace, urgent)
        # kube-scheduler evicts the whole lower gang for the higher one; the victim's RestartJob
        # policy counts an infrastructure restart, and its new pods wait whole.
        status = wait_for(
            lambda: json.loads(
                cluster.kubectl("get", "vcjob", "victim", "-n", namespace, "-o", "json").stdout
            )["status"],
            lambda s: (s.get("restartCounts") or {}).get("infrastructure") == 1,
            "the victim's RestartJob on PodEvicted, counted as infrastructure",
            WAIT,
        )
        assert status["retryCount"] == 1
        wait_for(
            lambda: (
                bound(pods_of(cluster, namespace, "urgent")),
                bound(pods_of(cluster, namespace, "victim")),
            ),
            lambda counts: counts == (2, 0),
            "the higher gang placed whole, the lower one waiting whole",
            WAIT,
        )
        wait_for(
            lambda: bound(pods_of(cluster, namespace, "victim")),
            lambda n: n == 2,
            "the lower gang placed again once the higher one completed",
            WAIT,
        )
    finally:
        cluster.kubectl("delete", "priorityclass", low, high, check=False)


def task_spec(name: str, replicas: int, cpu: str, min_available: int) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "minAvailable": min_available,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                ],
            }
        },
    }


def plain_pod(name: str, cpu: str) -> dict[str, Any]:
    """A pod kube-scheduler places on its own, holding `cpu` of a node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "hold"}},
        "spec": {
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
            ],
        },
    }


@needs_the_api
def test_per_task_min_available_is_a_composite_gang(cluster: LocalCluster, namespace: str) -> None:
    # Two plain pods of 4.5 and 6 CPUs leave 3.5 and 2 CPUs: room for both ps pods (0.1 CPU) and
    # one worker (3 CPUs), wherever the ps pods go. One gang of the job's minAvailable (3 pods of
    # any task) places those three; the tasks' own gangs need two workers, so nothing is bound
    # until a node is freed.
    for name, cpu in (("hold-4", "4500m"), ("hold-6", "6")):
        create(cluster, namespace, plain_pod(name, cpu))
    wait_for(
        lambda: [p["spec"].get("nodeName") for p in items(cluster, namespace, "pods")],
        lambda nodes: len(nodes) == 2 and all(nodes) and nodes[0] != nodes[1],
        "the plain pods on a node each",
        WAIT,
    )
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {
            "schedulerName": "default-scheduler",
            "tasks": [task_spec("ps", 2, "100m", 1), task_spec("worker", 4, "3", 2)],
        },
    }
    create(cluster, namespace, job)
    composites = wait_for(
        lambda: items(cluster, namespace, "compositepodgroups.scheduling.k8s.io"),
        lambda found: len(found) == 1,
        "the job's CompositePodGroup",
        WAIT,
    )
    uid = composites[0]["metadata"]["ownerReferences"][0]["uid"]
    name = f"train-{uid}"
    assert composites[0]["metadata"]["name"] == name
    assert composites[0]["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}
    (workload,) = items(cluster, namespace, "workloads.scheduling.k8s.io")
    (template,) = workload["spec"]["compositePodGroupTemplates"]
    assert [(t["name"], t["schedulingPolicy"]) for t in template["podGroupTemplates"]] == [
        ("ps", {"gang": {"minCount": 1}}),
        ("worker", {"gang": {"minCount": 2}}),
    ]
    groups = {
        g["metadata"]["name"]: g for g in items(cluster, namespace, "podgroups.scheduling.k8s.io")
    }
    assert sorted(groups) == [f"{name}-ps", f"{name}-worker"]
    assert {g["spec"]["parentCompositePodGroupName"] for g in groups.values()} == {name}
    why = wait_for(
        lambda: vcjob(cluster, "job", "why", "train", "-n", namespace),
        lambda text: "not placed: Unschedulable" in text,
        "`vcjob job why` to give kube-scheduler's verdict on the tasks' gangs",
        WAIT,
    )
    assert f"Composite gang {name} (kube-scheduler)" in why
    assert bound(pods_of(cluster, namespace, "train")) == 0, "a partial placement"

    cluster.kubectl("delete", "pod", "hold-6", "-n", namespace, "--wait=true")
    pods = wait_for(
        lambda: pods_of(cluster, namespace, "train"),
        lambda found: (
            bound([p for p in found if p["metadata"]["labels"]["volcano.sh/task-spec"] == "ps"])
            >= 1
            and bound(
                [p for p in found if p["metadata"]["labels"]["volcano.sh/task-spec"] == "worker"]
            )
            >= 2
        ),
        "ps and two workers placed together once a node is free",
        WAIT,
    )
    for pod in pods:
        task = pod["metadata"]["labels"]["volcano.sh/task-spec"]
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": f"{name}-{task}"}
    # A scale of one task resizes that task's PodGroup only; no group is created again.
    cluster.kubectl(
        "patch", "vcjob", "train", "-n", namespace, "--type", "json", "-p",
        json.dumps(
            [
                {"op": "replace", "path": "/spec/tasks/1/minAvailable", "value": 3},
                {"op": "replace", "path": "/spec/minAvailable", "value": 4},
            ]
        ),
    )  # fmt: skip
    resized = wait_for(
        lambda: {
            g["metadata"]["name"]: g["spec"]["schedulingPolicy"]
            for g in items(cluster, namespace, "podgroups.scheduling.k8s.io")
        },
        lambda found: found.get(f"{name}-worker") == {"gang": {"minCount": 3}},
        "the worker task's PodGroup resized to 3",
        WAIT,
    )
    assert resized == {
        f"{name}-ps": {"gang": {"minCount": 1}},
        f"{name}-worker": {"gang": {"minCount": 3}},
    }
    assert len(items(cluster, namespace, "compositepodgroups.scheduling.k8s.io")) == 1
