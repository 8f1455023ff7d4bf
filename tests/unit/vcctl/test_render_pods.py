"""`vcjob pod list`: kubectl's pod status, vcctl's table, and which pods `--queue` shows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from vcctl.render_pods import pod_cells, pod_table, pods_in_queue, queue_mismatch

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
CREATED = "2026-03-04T11:50:00Z"


def pod(
    name: str = "train-worker-0",
    *,
    phase: str = "Running",
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    init_specs: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    namespace: str = "default",
    job: str | None = "train",
    **meta: Any,
) -> dict[str, Any]:
    statuses = containers if containers is not None else [running()]
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": CREATED,
            "labels": {"volcano.sh/job-name": job} if job else {},
            **meta,
        },
        "spec": {
            "containers": [{"name": f"c{i}"} for i in range(len(statuses) or 1)],
            "initContainers": init_specs or [],
        },
        "status": {
            "phase": phase,
            "conditions": conditions or [],
            "containerStatuses": statuses,
            "initContainerStatuses": init or [],
        },
    }


def running(ready: bool = True, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": CREATED}},
        **extra,
    }


def waiting(reason: str) -> dict[str, Any]:
    return {"ready": False, "restartCount": 0, "state": {"waiting": {"reason": reason}}}


def terminated(**how: Any) -> dict[str, Any]:
    return {"ready": False, "restartCount": 0, "state": {"terminated": how}}


def restarted_at(stamp: str) -> dict[str, Any]:
    return {"lastState": {"terminated": {"exitCode": 1, "finishedAt": stamp}}}


@pytest.mark.parametrize(
    ("given", "ready", "status", "restarts"),
    [
        (pod(), "1/1", "Running", "0"),
        (pod(containers=[running(), running(ready=False)]), "1/2", "Running", "0"),
        (pod(phase="Pending", containers=[]), "0/1", "Pending", "0"),
        (pod(phase="Pending", containers=[waiting("ContainerCreating")]), "0/1",
         "ContainerCreating", "0"),
        (pod(phase="Succeeded", containers=[terminated(exitCode=0, reason="Completed")]), "0/1",
         "Completed", "0"),
        (pod(phase="Failed", containers=[terminated(exitCode=3)]), "0/1", "ExitCode:3", "0"),
        (pod(phase="Failed", containers=[terminated(exitCode=137, signal=9)]), "0/1", "Signal:9",
         "0"),
        (pod(containers=[running(restarts=2, **restarted_at("2026-03-04T11:57:00Z"))]), "1/1",
         "Running", "2 (3m ago)"),
        (pod(phase="Pending", containers=[],
             conditions=[{"type": "PodScheduled", "status": "False",
                          "reason": "SchedulingGated"}]), "0/1", "SchedulingGated", "0"),
        (pod(phase="Pending", containers=[waiting("PodInitializing")],
             init_specs=[{"name": "setup"}], init=[waiting("PodInitializing")]), "0/1",
         "Init:0/1", "0"),
        (pod(phase="Pending", containers=[], init_specs=[{"name": "setup"}],
             init=[terminated(exitCode=1, reason="Error")]), "0/1", "Init:Error", "0"),
        (pod(phase="Pending", containers=[], init_specs=[{"name": "setup"}],
             init=[waiting("CrashLoopBackOff")]), "0/1", "Init:CrashLoopBackOff", "0"),
        # A sidecar (an init container that always restarts) counts among the containers.
        (pod(init_specs=[{"name": "proxy", "restartPolicy": "Always"}],
             init=[{"name": "proxy", "started": True, **running()}],
             conditions=[{"type": "Initialized", "status": "True"}]), "2/2", "Running", "0"),
        (pod(deletionTimestamp="2026-03-04T11:59:00Z"), "1/1", "Terminating", "0"),
        (pod(phase="Succeeded", containers=[terminated(exitCode=0, reason="Completed")],
             deletionTimestamp="2026-03-04T11:59:00Z"), "0/1", "Completed", "0"),
    ],
    ids=[
        "running", "one of two ready", "pending, no status yet", "waiting reason",
        "completed", "exit code", "signal", "restarts with when", "scheduling gated",
        "init pending", "init failed", "init crash loop", "sidecar", "terminating",
        "finished pods are never terminating",
    ],
)  # fmt: skip
def test_pod_cells_reckon_status_as_kubectl(
    given: dict[str, Any], ready: str, status: str, restarts: str
) -> None:
    assert pod_cells(given, NOW) == ["train-worker-0", ready, status, restarts, "10m"]


def test_a_lost_node_makes_a_deleted_pod_unknown() -> None:
    lost = pod(deletionTimestamp="2026-03-04T11:59:00Z")
    lost["status"]["reason"] = "NodeLost"
    assert pod_cells(lost, NOW)[2] == "Unknown"


def test_pod_table_pads_each_column_to_its_longest_cell_plus_eight() -> None:
    assert pod_table([pod()], NOW).splitlines() == [
        "Name                  Ready      Status         Restart  Age",
        "train-worker-0        1/1        Running        0        10m",
    ]
    assert pod_table([], NOW) == "No resources found"


def test_pod_table_puts_the_namespace_first_for_every_namespace() -> None:
    header, row = pod_table([pod(namespace="team-a")], NOW, all_namespaces=True).splitlines()
    assert header.split() == ["Namespace", "Name", "Ready", "Status", "Restart", "Age"]
    assert row.split()[:2] == ["team-a", "train-worker-0"]


def job(name: str, queue: str | None, namespace: str = "default") -> dict[str, Any]:
    spec = {"queue": queue} if queue else {}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_pods_in_queue_go_through_each_jobs_queue() -> None:
    pods = [
        pod("a-0", job="a"),
        pod("b-0", job="b"),
        pod("a-0", job="a", namespace="other"),  # a Job of the same name in another queue
        pod("c-0", job="c"),  # its Job is in no queue given: the default one
        pod("web-0", job=None, annotations={"scheduling.volcano.sh/queue-name": "big"}),
        pod("web-1", job=None),
    ]
    jobs = [job("a", "big"), job("b", "small"), job("a", "small", "other"), job("c", None)]
    names = [
        (p["metadata"]["namespace"], p["metadata"]["name"])
        for p in pods_in_queue(pods, jobs, "big")
    ]
    assert names == [("default", "a-0"), ("default", "web-0")]
    default = pods_in_queue(pods, jobs, "default")
    assert [p["metadata"]["name"] for p in default] == ["c-0"]


def test_a_job_and_a_queue_that_do_not_go_together() -> None:
    jobs = [job("a", "big"), job("b", None)]
    assert queue_mismatch(jobs, "a", "big") is None
    assert queue_mismatch(jobs, "ghost", "big") is None
    assert queue_mismatch(jobs, "b", "big") == (
        "the input vcjob b does not match the queue big (it is in queue default)"
    )
