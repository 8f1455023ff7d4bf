"""The Job controller's decisions, table-driven against kube's job controller semantics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localcluster.controllers.jobs import (
    COMPLETE,
    FAILED,
    SUSPENDED,
    Decision,
    count_pods,
    decide,
    job_status,
    new_pod,
    ttl_expiry,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def job(**spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {})
    return {
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 6,
            "template": {
                "metadata": {"labels": {"job-name": "pi"}},
                "spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"},
            },
            **spec,
        },
        "status": status,
    }


def pod(phase: str, ready: bool = False, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p-{phase}", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"metadata": meta, "status": {"phase": phase, "conditions": conditions}}


@pytest.mark.parametrize(
    ("spec", "pods", "create", "deleted", "condition"),
    [
        ({}, [], 1, 0, None),
        ({"parallelism": 3, "completions": 5}, [], 3, 0, None),
        ({"parallelism": 3, "completions": 5}, [pod("Succeeded")] * 3, 2, 0, None),
        ({"parallelism": 2, "completions": 2}, [pod("Running")] * 2, 0, 0, None),
        ({}, [pod("Succeeded")], 0, 0, COMPLETE),
        ({"completions": None, "parallelism": 2}, [], 2, 0, None),
        ({"completions": None, "parallelism": 2}, [pod("Succeeded"), pod("Running")], 0, 0, None),
        ({"completions": None, "parallelism": 2}, [pod("Succeeded")], 0, 0, COMPLETE),
        ({"backoffLimit": 1}, [pod("Failed")], 1, 0, None),
        ({"backoffLimit": 1}, [pod("Failed")] * 2 + [pod("Running")], 0, 1, FAILED),
        ({"suspend": True}, [pod("Running")], 0, 1, SUSPENDED),
        ({"parallelism": 1, "completions": 3}, [pod("Running")] * 2, 0, 1, None),
        # A pod being deleted is not active: a replacement starts, as in kube.
        ({}, [pod("Running", deleting=True)], 1, 0, None),
    ],
)
def test_decide(
    spec: dict[str, Any],
    pods: list[dict[str, Any]],
    create: int,
    deleted: int,
    condition: str | None,
) -> None:
    decision = decide(job(**spec), count_pods(pods), NOW)
    assert decision.create == create
    assert len(decision.delete) == deleted
    assert (decision.condition[0] if decision.condition else None) == condition


def test_a_finished_job_is_left_alone() -> None:
    done = job(status={"conditions": [{"type": "Complete", "status": "True"}]})
    assert decide(done, count_pods([]), NOW) == Decision()


def test_the_active_deadline_fails_the_job() -> None:
    started = (NOW - timedelta(seconds=11)).strftime("%Y-%m-%dT%H:%M:%SZ")
    late = job(activeDeadlineSeconds=10, status={"startTime": started})
    decision = decide(late, count_pods([pod("Running")]), NOW)
    assert decision.condition is not None
    assert decision.condition[:2] == (FAILED, "DeadlineExceeded")
    assert len(decision.delete) == 1


def test_status_counts_pods_and_completes() -> None:
    pods = [pod("Succeeded")]
    counts = count_pods(pods)
    status = job_status(job(), counts, decide(job(), counts, NOW), NOW)
    assert status["succeeded"] == 1
    assert "active" not in status
    assert status["startTime"] == "2026-01-01T12:00:00Z"
    assert status["completionTime"] == "2026-01-01T12:00:00Z"
    assert [c["type"] for c in status["conditions"]] == ["Complete"]


def test_status_counts_the_pods_it_creates_as_active() -> None:
    counts = count_pods([pod("Running", ready=True)])
    spec = {"parallelism": 2, "completions": 2}
    status = job_status(job(**spec), counts, decide(job(**spec), counts, NOW), NOW)
    assert status["active"] == 2
    assert status["ready"] == 1


def test_new_pod_is_controlled_by_the_job() -> None:
    made = new_pod(job())
    (owner,) = made["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "pi",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert made["metadata"]["generateName"] == "pi-"
    assert made["metadata"]["labels"] == {"job-name": "pi"}
    assert made["spec"]["restartPolicy"] == "Never"


def test_ttl_expiry_counts_from_completion() -> None:
    finished = job(
        ttlSecondsAfterFinished=30,
        status={
            "completionTime": "2026-01-01T12:00:00Z",
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    )
    assert ttl_expiry(finished) == NOW + timedelta(seconds=30)
    assert ttl_expiry(job(ttlSecondsAfterFinished=30)) is None
