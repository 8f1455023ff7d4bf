"""The CronJob controller's decisions: when a Job starts, concurrency, history and status."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from localcluster.controllers.cronjobs import SCHEDULED_AT, job_for, plan

NOW = datetime(2026, 3, 2, 10, 7, 30, tzinfo=UTC)


def cronjob(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "tick",
            "namespace": "ns",
            "uid": "cj-1",
            "creationTimestamp": "2026-03-02T10:00:10Z",
        },
        "spec": {
            "schedule": "*/5 * * * *",
            "concurrencyPolicy": "Allow",
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {
                "metadata": {"labels": {"app": "tick"}},
                "spec": {"template": {"spec": {"restartPolicy": "Never"}}},
            },
            **spec,
        },
        "status": status or {},
    }


def job(
    name: str, finished: str | None = None, created: str = "2026-03-02T09:00:00Z"
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if finished:
        status["conditions"] = [{"type": finished, "status": "True"}]
        status["completionTime"] = created
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"u-{name}",
            "creationTimestamp": created,
        },
        "status": status,
    }


def test_the_most_recent_time_since_creation_starts_a_job() -> None:
    decision = plan(cronjob(), [], NOW)
    assert decision.create is not None
    assert (
        decision.create["metadata"]["name"]
        == f"tick-{int(datetime(2026, 3, 2, 10, 5, tzinfo=UTC).timestamp()) // 60}"
    )
    assert decision.create["metadata"]["annotations"] == {SCHEDULED_AT: "2026-03-02T10:05:00Z"}
    assert decision.create["metadata"]["labels"] == {"app": "tick"}
    assert decision.status["lastScheduleTime"] == "2026-03-02T10:05:00Z"
    assert decision.wake_in == 150.0  # until 10:10:00


def test_nothing_starts_before_the_next_time() -> None:
    decision = plan(cronjob({"lastScheduleTime": "2026-03-02T10:05:00Z"}), [], NOW)
    assert decision.create is None
    assert decision.delete == []


@pytest.mark.parametrize(
    ("spec", "creates", "deletes"),
    [
        ({"concurrencyPolicy": "Allow"}, True, 0),
        ({"concurrencyPolicy": "Forbid"}, False, 0),
        ({"concurrencyPolicy": "Replace"}, True, 1),
        ({"suspend": True}, False, 0),
        ({"startingDeadlineSeconds": 60}, False, 0),  # 10:05 is 150 s ago
        ({"startingDeadlineSeconds": 200}, True, 0),
    ],
)
def test_concurrency_suspension_and_deadline(
    spec: dict[str, Any], creates: bool, deletes: int
) -> None:
    decision = plan(cronjob(**spec), [job("running")], NOW)
    assert (decision.create is not None) is creates
    assert len(decision.delete) == deletes


def test_history_beyond_the_limits_is_deleted_oldest_first() -> None:
    jobs = [
        job("ok-1", "Complete", "2026-03-02T09:00:00Z"),
        job("ok-2", "Complete", "2026-03-02T09:05:00Z"),
        job("ok-3", "Complete", "2026-03-02T09:10:00Z"),
        job("ok-4", "Complete", "2026-03-02T09:15:00Z"),
        job("bad-1", "Failed", "2026-03-02T09:20:00Z"),
        job("bad-2", "Failed", "2026-03-02T09:25:00Z"),
    ]
    decision = plan(cronjob({"lastScheduleTime": "2026-03-02T10:05:00Z"}), jobs, NOW)
    assert [j["metadata"]["name"] for j in decision.delete] == ["ok-1", "bad-1"]
    assert decision.status["lastSuccessfulTime"] == "2026-03-02T09:15:00Z"
    assert "active" not in decision.status


def test_running_jobs_are_listed_as_active() -> None:
    decision = plan(cronjob({"lastScheduleTime": "2026-03-02T10:05:00Z"}), [job("running")], NOW)
    assert decision.status["active"] == [
        {
            "kind": "Job",
            "namespace": "ns",
            "name": "running",
            "uid": "u-running",
            "apiVersion": "batch/v1",
            "resourceVersion": None,
        }
    ]


def test_the_job_is_controlled_by_the_cronjob() -> None:
    made = job_for(cronjob(), NOW)
    assert made["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": "tick",
            "uid": "cj-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert made["spec"] == {"template": {"spec": {"restartPolicy": "Never"}}}
