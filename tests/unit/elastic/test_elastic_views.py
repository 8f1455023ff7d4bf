"""Wire dicts (as the API server returns them) → the views the plan reads."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from controller.elastic.decide.plan import ElasticSettings, plan_elastic
from controller.elastic.decide.views import (
    job_view_from_wire,
    node_view_from_wire,
    pod_view_from_wire,
)

GPU = "nvidia.com/gpu"


def wire_job(**task_fields: Any) -> dict[str, Any]:
    worker = {
        "name": "worker",
        "replicas": 2,
        "minReplicas": 1,
        "maxReplicas": 6,
        "template": {
            "spec": {
                "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "4"}}}],
                "containers": [
                    {
                        "name": "train",
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "1Gi"},
                            "limits": {GPU: "1", "memory": "2Gi"},
                        },
                    },
                    {"name": "sidecar", "resources": {"limits": {"cpu": "250m"}}},
                ],
                "overhead": {"memory": "64Mi"},
            }
        },
    }
    worker.update(task_fields)
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"minAvailable": 2, "tasks": [{"name": "ps", "replicas": 1}, worker]},
        "status": {"state": {"phase": "Running"}},
    }


def test_job_view_reads_tasks_bounds_and_per_instance_amounts() -> None:
    view = job_view_from_wire(wire_job())
    assert (view.namespace, view.name, view.phase, view.min_available) == (
        "ml",
        "train",
        "Running",
        2,
    )
    ps, worker = view.tasks
    assert not ps.is_elastic
    assert worker.is_elastic
    assert (worker.replicas, worker.min_replicas, worker.max_replicas) == (2, 1, 6)
    # Requests default to limits per container; the largest init container wins; overhead adds.
    assert worker.requests == {
        "cpu": Decimal("4"),
        "memory": Decimal(1024**3 + 64 * 1024**2),
        GPU: Decimal(1),
    }
    # Limits fall back to requests where a container sets none.
    assert worker.limits == {
        "cpu": Decimal("4"),
        "memory": Decimal(2 * 1024**3 + 64 * 1024**2),
        GPU: Decimal(1),
    }


def test_job_view_of_a_job_without_status_has_no_phase() -> None:
    job = wire_job()
    del job["status"]
    assert job_view_from_wire(job).phase == ""


def test_a_malformed_job_is_named_in_the_error() -> None:
    job = wire_job(replicas="many")
    with pytest.raises(ValueError, match="job ml/train cannot be read"):
        job_view_from_wire(job)


def test_equal_bounds_are_not_elastic() -> None:
    assert not job_view_from_wire(wire_job(minReplicas=3, maxReplicas=3)).tasks[1].is_elastic


def node(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "node-1"}, "spec": {}, "status": status}


@pytest.mark.parametrize(
    ("task_fields", "task_minimum", "job_minimum"),
    [
        # a partitioned task needs minPartitions·partitionSize pods, as its PodGroup says
        ({"minReplicas": 8, "maxReplicas": 8, "replicas": 8}, 8, 9),
        (
            {
                "minReplicas": 8,
                "maxReplicas": 8,
                "replicas": 8,
                "partitionPolicy": {"totalPartitions": 4, "partitionSize": 2, "minPartitions": 2},
            },
            4,
            5,
        ),
        (
            {
                "minReplicas": 8,
                "maxReplicas": 8,
                "replicas": 8,
                "minAvailable": 6,
                "partitionPolicy": {"totalPartitions": 4, "partitionSize": 2, "minPartitions": 2},
            },
            6,
            7,
        ),
    ],
)
def test_the_gang_size_of_a_partitioned_task(
    task_fields: dict[str, Any], task_minimum: int, job_minimum: int
) -> None:
    job = wire_job(**task_fields)
    del job["spec"]["minAvailable"]
    view = job_view_from_wire(job)
    assert view.tasks[1].minimum == task_minimum
    assert view.minimum == job_minimum


@pytest.mark.parametrize(
    ("wire", "schedulable", "gpus"),
    [
        (
            node(
                allocatable={GPU: "4", "cpu": "8"}, conditions=[{"type": "Ready", "status": "True"}]
            ),
            True,
            4,
        ),
        (node(capacity={GPU: "2"}), True, 2),
        (node(allocatable={GPU: "4"}, conditions=[{"type": "Ready", "status": "False"}]), False, 4),
        ({**node(allocatable={GPU: "4"}), "spec": {"unschedulable": True}}, False, 4),
    ],
    ids=["ready", "capacity-when-no-allocatable", "not-ready", "cordoned"],
)
def test_node_view(wire: dict[str, Any], schedulable: bool, gpus: int) -> None:
    view = node_view_from_wire(wire)
    assert view.schedulable is schedulable
    assert view.allocatable[GPU] == gpus


def test_pod_view_reads_job_task_index_phase_and_amounts() -> None:
    pod = {
        "metadata": {
            "name": "train-worker-3",
            "namespace": "ml",
            "labels": {"volcano.sh/job-name": "train", "volcano.sh/task-spec": "worker"},
            "annotations": {"volcano.sh/task-index": "3"},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"containers": [{"resources": {"limits": {GPU: 1, "cpu": "2"}}}]},
        "status": {"phase": "Running"},
    }
    view = pod_view_from_wire(pod)
    assert (view.job, view.task, view.index, view.phase) == ("train", "worker", 3, "Running")
    assert view.terminating and not view.active
    assert view.requests == {GPU: 1, "cpu": 2}


def test_pod_without_vcjob_labels_belongs_to_no_job() -> None:
    view = pod_view_from_wire({"metadata": {"name": "x", "namespace": "default"}, "spec": {}})
    assert (view.job, view.task, view.index, view.phase) == ("", "", None, "Pending")
    assert view.active


def test_views_from_wire_feed_the_plan() -> None:
    nodes = [
        node_view_from_wire(
            {
                "metadata": {"name": f"n{i}"},
                "status": {"allocatable": {GPU: "4", "cpu": "64", "memory": "256Gi"}},
            }
        )
        for i in range(2)
    ]
    job = job_view_from_wire(wire_job())
    (decision,) = plan_elastic([job], nodes, [], ElasticSettings())
    assert (decision.namespace, decision.job, decision.task) == ("ml", "train", "worker")
    assert (decision.from_replicas, decision.to_replicas) == (2, 6)
