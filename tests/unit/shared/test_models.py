"""The models own wire names and never lose what users wrote."""

from __future__ import annotations

import copy
from typing import Any

from shared.models import Job, Queue

TEMPLATE: dict[str, Any] = {
    "metadata": {"annotations": {"x": "y"}},
    "spec": {
        "containers": [{"name": "c", "image": "busybox", "futureField": {"keep": True}}],
        "someUnknownPodField": 7,
    },
}
RAW: dict[str, Any] = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "j", "namespace": "ns"},
    "spec": {
        "minAvailable": 1,
        "partitionPolicy": {"totalPartitions": 1},
        "tasks": [{"name": "w", "replicas": 2, "template": TEMPLATE, "extraTaskField": "x"}],
    },
}


def test_wire_names_are_camel_case_and_attributes_snake_case() -> None:
    job = Job.from_wire(RAW)
    assert job.spec.min_available == 1
    assert job.spec.tasks[0].replica_count == 2
    assert "minAvailable" in job.to_wire()["spec"]


def test_unknown_fields_survive_a_round_trip() -> None:
    wire = Job.from_wire(copy.deepcopy(RAW)).to_wire()
    assert wire["spec"]["partitionPolicy"] == {"totalPartitions": 1}
    assert wire["spec"]["tasks"][0]["extraTaskField"] == "x"


def test_pod_templates_are_untouched_dicts() -> None:
    job = Job.from_wire(copy.deepcopy(RAW))
    assert job.spec.tasks[0].template == TEMPLATE
    assert job.to_wire()["spec"]["tasks"][0]["template"] == TEMPLATE


def test_queue_without_state_counts_as_open() -> None:
    assert Queue.from_wire({"metadata": {"name": "q"}}).is_open
    assert Queue.from_wire({"metadata": {"name": "q"}, "status": {"state": "Open"}}).is_open
    assert not Queue.from_wire({"metadata": {"name": "q"}, "status": {"state": "Closed"}}).is_open
