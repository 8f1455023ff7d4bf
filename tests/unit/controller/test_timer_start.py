"""Where a delayed action's clock starts: from what the API records, so a controller restart
keeps the deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import job, plan_for, pod_of, ts

from controller.job.decide.policies import JobEvent
from controller.job.decide.timers import timer_start
from shared.models import PolicyEvent

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _failed(finished: datetime | None) -> dict[str, Any]:
    terminated: dict[str, Any] = {"exitCode": 1}
    if finished is not None:
        terminated["finishedAt"] = ts(finished)
    return {
        "metadata": {"name": "p", "creationTimestamp": ts(NOW - timedelta(hours=1))},
        "status": {"phase": "Failed", "containerStatuses": [{"state": {"terminated": terminated}}]},
    }


@pytest.mark.parametrize(
    ("event", "pod", "expected"),
    [
        (PolicyEvent.POD_FAILED, _failed(NOW - timedelta(seconds=20)), NOW - timedelta(seconds=20)),
        (PolicyEvent.POD_FAILED, _failed(None), NOW),
        (PolicyEvent.POD_FAILED, _failed(NOW + timedelta(seconds=5)), NOW),
        (PolicyEvent.POD_PENDING, _failed(None), NOW - timedelta(hours=1)),
        (PolicyEvent.TASK_COMPLETED, _failed(NOW - timedelta(seconds=20)), NOW),
    ],
    ids=[
        "failed: finishedAt",
        "failed: no finishedAt",
        "failed: clock skew",
        "pending: created",
        "other events: now",
    ],
)
def test_timer_start(event: PolicyEvent, pod: dict[str, Any], expected: datetime) -> None:
    assert timer_start(JobEvent(event, "d", "w", "p"), pod, NOW) == expected


def test_a_pod_failed_timer_keeps_its_deadline_across_a_controller_restart() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodFailed", action="RestartJob", timeout="30s")
        .phase("Running")
        .build()
    )
    failed = pod_of(j, "w", 0, phase="Failed", exit_code=1)
    failed["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = ts(NOW)
    pods = [failed, pod_of(j, "w", 1)]
    # A fresh controller (no memory) sees the failure 31s after it happened: the action fires.
    plan = plan_for(j, pods, now=NOW + timedelta(seconds=31), memory=None)
    assert plan.status is not None
    assert plan.status["state"]["phase"] == "Restarting"
