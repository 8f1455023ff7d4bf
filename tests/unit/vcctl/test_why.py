"""`vcjob job why` rendering: the reason, PodGroup, Queue, stuck pods with events, the hint."""

from __future__ import annotations

from typing import Any

import pytest

from vcctl.why import (
    WhyFacts,
    clusters_to_ask,
    explain,
    job_reason,
    missing_pod_group,
    unblock_hint,
)


def job(phase: str, reason: str | None = None, message: str = "", **status: Any) -> dict[str, Any]:
    st: dict[str, Any] = {"state": {"phase": phase, "reason": "JobCreated"}, **status}
    if reason:
        kind = "Failed" if phase == "Failed" else "Blocked"
        st["typedConditions"] = [
            {"type": kind, "status": "True", "reason": reason, "message": message}
        ]
    return {
        "metadata": {"name": "big", "namespace": "ns", "uid": "u1"},
        "spec": {"queue": "q1", "maxRetry": 2},
        "status": st,
    }


GROUP = {
    "metadata": {"name": "big-u1"},
    "spec": {"minMember": 2, "minResources": {"cpu": "64"}},
    "status": {
        "phase": "Pending",
        "conditions": [
            {"type": "Unschedulable", "status": "True", "message": "cpu 64 > 8 in the cluster"}
        ],
    },
}
QUEUE = {
    "metadata": {"name": "q1"},
    "spec": {"capability": {"cpu": "100"}},
    "status": {"state": "Open", "allocated": {"cpu": "2"}},
}
STUCK_POD = {
    "metadata": {"name": "big-w-0"},
    "status": {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/2 nodes are available",
            }
        ],
    },
}
FAILED_POD = {
    "metadata": {"name": "big-w-1"},
    "status": {
        "phase": "Failed",
        "containerStatuses": [
            {"name": "main", "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}
        ],
    },
}
EVENT = {
    "involvedObject": {"kind": "Pod", "name": "big-w-0"},
    "reason": "FailedScheduling",
    "message": "0/2 nodes are available",
    "lastTimestamp": "2026-01-01T00:00:00Z",
}


def test_a_job_too_large_for_the_cluster() -> None:
    text = explain(
        WhyFacts(
            job("Pending", "Unschedulable", "cpu 64 > 8 in the cluster"),
            GROUP,
            QUEUE,
            [STUCK_POD, FAILED_POD],
            [EVENT],
        )
    )
    lines = text.splitlines()
    assert lines[0] == "Job ns/big: Pending"
    assert lines[1] == "  Reason:   Unschedulable: cpu 64 > 8 in the cluster"
    assert "PodGroup big-u1: Pending, minMember 2, minResources cpu=64" in lines
    assert "  Unschedulable: cpu 64 > 8 in the cluster" in lines
    assert "Queue q1: Open, capability cpu=100, allocated cpu=2" in lines
    assert "Pods: 0 running, 2 not running" in lines
    assert "  big-w-0: Pending - PodScheduled=Unschedulable: 0/2 nodes are available" in lines
    assert "    event FailedScheduling: 0/2 nodes are available" in lines
    assert "  big-w-1: Failed - main exit code 3 (Error)" in lines
    assert lines[-1].startswith("To unblock: free or add capacity")


def test_a_pod_larger_than_every_node_is_not_told_to_free_capacity() -> None:
    """Another node of the same size would not help: the hint says to ask for less per pod."""
    too_large = (
        "pod big-w-0 requests cpu 64 but the largest node has 8 allocatable: no node can run it"
    )
    group = {
        **GROUP,
        "status": {
            "phase": "Inqueue",
            "conditions": [{"type": "Unschedulable", "status": "True", "message": too_large}],
        },
    }
    text = explain(
        WhyFacts(
            job("Pending", "Unschedulable", "pod big-w-0: 0/2 nodes are available"),
            group,
            QUEUE,
            [STUCK_POD],
            [],
        )
    )
    assert f"  Unschedulable: {too_large}" in text.splitlines()
    assert text.splitlines()[-1].startswith("To unblock: ask for less per pod (requests)")


def test_a_pod_group_no_scheduler_has_looked_at() -> None:
    """The node agent (the stand-in gang scheduler) not running: the group has no condition."""
    group = {**GROUP, "status": {"phase": "Pending"}}
    text = explain(WhyFacts(job("Pending"), group, QUEUE, [], []))
    assert text.splitlines()[-1] == (
        "To unblock: no scheduler has looked at the PodGroup yet (no condition on it): is the "
        "'volcano' scheduler running? (on `vcjob local up`, the node agent: logs/simulator.log)"
    )
    assert "nothing found blocking" in explain(WhyFacts(job("Pending"), GROUP, QUEUE, [], []))


def test_a_missing_queue_and_no_pod_group() -> None:
    text = explain(WhyFacts(job("Pending", "QueueMissing", "queue q1 does not exist")))
    assert "Queue q1: does not exist" in text.splitlines()
    assert "PodGroup: none yet" in text.splitlines()
    assert text.splitlines()[-1] == "To unblock: create the queue: vcjob queue create -n q1"


@pytest.mark.parametrize(
    ("phase", "suspend", "line"),
    [
        ("Pending", False, "PodGroup: none yet"),
        ("Failed", False, "PodGroup: none (deleted when the job finished)"),
        ("Completed", False, "PodGroup: none (deleted when the job finished)"),
        ("Terminated", False, "PodGroup: none (deleted when the job finished)"),
        (
            "Aborted",
            False,
            "PodGroup: none (deleted when the job was suspended; resuming creates a new one)",
        ),
        (
            "Pending",
            True,
            "PodGroup: none (deleted when the job was suspended; resuming creates a new one)",
        ),
        (
            "Restarting",
            False,
            "PodGroup: none (deleted for the restart; a new one comes with the new pods)",
        ),
    ],
)
def test_a_missing_pod_group_is_explained_by_the_phase(
    phase: str, suspend: bool, line: str
) -> None:
    j = job(phase)
    j["spec"]["suspend"] = suspend
    assert line in explain(WhyFacts(j, queue=QUEUE)).splitlines()
    assert line == f"PodGroup: {missing_pod_group(j)}"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (
            {"state": {"phase": "Running", "reason": "MinAvailableRunning", "message": "m"}},
            ("MinAvailableRunning", "m"),
        ),
        (job("Pending", "QueueClosed", "closed")["status"], ("QueueClosed", "closed")),
        (job("Failed", "DeadlineExceeded", "too long")["status"], ("DeadlineExceeded", "too long")),
    ],
)
def test_job_reason_prefers_the_typed_conditions(
    status: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert job_reason({"status": status}) == expected


@pytest.mark.parametrize(
    ("reason", "fragment"),
    [
        ("QueueClosed", "vcjob queue operate -n q1 -a open"),
        ("MissingPVC", "create the PersistentVolumeClaim"),
        ("ImagePullBackOff", "fix the image name"),
        ("DeadlineExceeded", "activeDeadlineSeconds"),
        ("BackoffLimitExceeded", "retries ran out"),
        ("MinAvailableRunning", ""),
    ],
)
def test_unblock_hints(reason: str, fragment: str) -> None:
    hint = unblock_hint(reason, job("Pending"), "q1")
    assert fragment in hint
    assert bool(hint) is bool(fragment)


def test_the_last_ended_attempt_is_shown() -> None:
    attempts = [
        {"index": 0, "endTime": "t1", "cause": "Infrastructure", "reason": "RestartJob because x"},
        {
            "index": 1,
            "endTime": "t2",
            "reason": "PodFailed",
            "failedPods": [{"name": "big-w-0", "exitCode": 3}, {"name": "big-w-1"}],
        },
        {"index": 2, "startTime": "t3"},
    ]
    text = explain(WhyFacts(job("Running", attempts=attempts), queue=QUEUE))
    assert (
        "  Attempt 1 ended t2: PodFailed; failed pods: big-w-0 (exit code 3), big-w-1"
        in text.splitlines()
    )


def native_group(*conditions: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "big-u1"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        "status": {"conditions": list(conditions)},
    }


@pytest.mark.parametrize(
    ("conditions", "line", "hint"),
    [
        pytest.param(
            [
                {
                    "type": "PodGroupInitiallyScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/2 nodes are available: 2 Insufficient cpu.",
                }
            ],
            "Gang big-u1 (kube-scheduler): minCount 3, not placed: Unschedulable: "
            "0/2 nodes are available: 2 Insufficient cpu.",
            "To unblock: free or add capacity",
            id="unschedulable",
        ),
        pytest.param(
            [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"}],
            "Gang big-u1 (kube-scheduler): minCount 3, placed",
            "To unblock: nothing found blocking the job",
            id="placed",
        ),
        pytest.param(
            [],
            "Gang big-u1 (kube-scheduler): minCount 3, not looked at by kube-scheduler yet",
            "To unblock: nothing found blocking the job",
            id="not-yet",
        ),
    ],
)
def test_kube_schedulers_gang(conditions: list[dict[str, str]], line: str, hint: str) -> None:
    pending = job("Pending")
    pending["spec"]["schedulerName"] = "default-scheduler"
    text = explain(WhyFacts(pending, None, QUEUE, native_pod_groups=[native_group(*conditions)]))
    assert line in text.splitlines()
    assert text.splitlines()[-1].startswith(hint)


def test_a_composite_gang_shows_each_tasks_verdict() -> None:
    pending = job("Pending")
    pending["spec"]["schedulerName"] = "default-scheduler"
    composite = {
        "metadata": {"name": "big-u1"},
        "spec": {"schedulingPolicy": {"gang": {"minGroupCount": 2}}},
    }
    unschedulable = {
        "type": "PodGroupInitiallyScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/2 nodes are available: 2 Insufficient cpu.",
    }
    groups = []
    for task, count in (("w", 2), ("ps", 1)):
        group = native_group(unschedulable)
        group["metadata"]["name"] = f"big-u1-{task}"
        group["spec"]["schedulingPolicy"]["gang"]["minCount"] = count
        groups.append(group)
    text = explain(
        WhyFacts(pending, None, QUEUE, native_pod_groups=groups, native_composite=composite)
    )
    lines = text.splitlines()
    start = lines.index(
        "Composite gang big-u1 (kube-scheduler): every task's gang, minGroupCount 2"
    )
    assert lines[start + 1 : start + 3] == [
        "  Gang big-u1-ps (kube-scheduler): minCount 1, not placed: Unschedulable: "
        "0/2 nodes are available: 2 Insufficient cpu.",
        "  Gang big-u1-w (kube-scheduler): minCount 2, not placed: Unschedulable: "
        "0/2 nodes are available: 2 Insufficient cpu.",
    ]
    assert lines[-1].startswith("To unblock: free or add capacity")


def dispatched(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "mk", "namespace": "ns", "uid": "u2"},
        "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "maxRetry": 3},
        "status": status,
    }


def mk_workload(*conditions: tuple[str, str, str], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "job-mk-12345"},
        "status": {
            "conditions": [{"type": t, "status": s, "message": m} for t, s, m in conditions],
            **status,
        },
    }


RESERVED = ("QuotaReserved", "True", "Quota reserved in ClusterQueue multikueue")


@pytest.mark.parametrize(
    ("case", "workload", "workers", "expected", "hint"),
    [
        (
            "running on a worker",
            mk_workload(RESERVED, ("Admitted", "True", ""), clusterName="w1"),
            {"w1": mk_workload(RESERVED, ("Admitted", "True", ""))},
            ["MultiKueue: runs on worker cluster w1", "  w1: admitted"],
            None,
        ),
        (
            "no worker has room",
            mk_workload(RESERVED, nominatedClusterNames=["w1", "w2"]),
            {
                "w1": mk_workload(("QuotaReserved", "False", "insufficient quota for cpu")),
                "w2": "cannot read its kubeconfig: 403 Forbidden",
            },
            [
                "MultiKueue: no worker cluster has admitted it (offered to w1, w2)",
                "  w1: insufficient quota for cpu",
                "  w2: cannot read its kubeconfig: 403 Forbidden",
            ],
            "To unblock: a worker cluster's ClusterQueue must have room for the job",
        ),
        (
            "no room on the manager",
            mk_workload(("QuotaReserved", "False", "insufficient quota in multikueue")),
            {},
            ["MultiKueue: waits in the manager's ClusterQueue: insufficient quota in multikueue"],
            "To unblock: the manager's ClusterQueue must have room for the job",
        ),
        (
            "finished",
            mk_workload(RESERVED, ("Finished", "True", "the job is Completed"), clusterName="w2"),
            {},
            ["MultiKueue: finished on worker cluster w2 (the job is Completed)"],
            None,
        ),
        (
            "no Workload",
            None,
            {},
            ["MultiKueue: the job has no Workload yet"],
            "To unblock: check that vcjob's controller runs on this (the manager) cluster",
        ),
    ],
)
def test_a_job_multikueue_dispatches_is_explained_by_its_workloads(
    case: str,
    workload: dict[str, Any] | None,
    workers: dict[str, Any],
    expected: list[str],
    hint: str | None,
) -> None:
    text = explain(WhyFacts(dispatched(), workload=workload, worker_workloads=workers))
    for line in expected:
        assert line in text, (case, text)
    assert text.splitlines()[0] == "Job ns/mk: not dispatched yet"
    # The PodGroup and the Queue live on the worker.
    assert not any(line.startswith(("PodGroup", "Queue")) for line in text.splitlines())
    if hint is None:
        assert "To unblock" not in text
    else:
        assert hint in text


def test_the_workers_asked_are_the_one_running_it_else_those_offered_it() -> None:
    assert clusters_to_ask(mk_workload(RESERVED, clusterName="w1")) == ["w1"]
    offered = mk_workload(RESERVED, nominatedClusterNames=["w1", "w2"])
    assert clusters_to_ask(offered) == ["w1", "w2"]
    finished = mk_workload(("Finished", "True", ""), clusterName="w1")
    assert clusters_to_ask(finished) == []  # MultiKueue removed the copies
