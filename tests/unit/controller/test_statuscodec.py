"""`controller.job.decide.statuscodec`: the status read through `JobStatus` and written back
over what was read."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.decide import deadline, restarts, statuscodec
from controller.job.decide import status as status_mod
from shared.models import JobPhase
from shared.models.job import JobStatus

READ: dict[str, Any] = {
    "state": {
        "phase": "Running",
        "reason": "MinAvailable",
        "message": "enough pods run",
        "lastTransitionTime": "2026-01-01T11:00:00Z",
    },
    "version": 2,
    "retryCount": 1,
    "succeededIndexes": {"w": "0-2,5"},
    "controlledResources": {
        "plugin-svc": "svc",
        restarts.RECORD_KEY: restarts.encode(
            restarts.RestartRecord(restarts.PolicyAction.RESTART_TASK, frozenset({"w"}))
        ),
    },
    "conditions": [{"status": "Running", "lastTransitionTime": "2026-01-01T11:00:00Z"}],
    "restartCounts": {"application": 1},
    "attempts": [{"index": 0, "startTime": "2026-01-01T10:00:00Z"}],
    "startTime": "2026-01-01T10:00:00Z",
    "suspendedSeconds": 7,
    "runningDuration": "1h0m0s",
    "somethingElse": {"kept": True},
}


def test_decode() -> None:
    s = statuscodec.decode(JobStatus.from_wire(READ))
    assert (s.initial_phase, s.phase, s.reason, s.message) == (
        JobPhase.RUNNING,
        JobPhase.RUNNING,
        "MinAvailable",
        "enough pods run",
    )
    assert (s.version, s.retry_count, s.running_duration) == (2, 1, "1h0m0s")
    assert s.recorded_succeeded == {"w": {0, 1, 2, 5}}
    assert s.restart is not None and s.restart.tasks == frozenset({"w"})
    assert s.restart_counts == {"application": 1, "infrastructure": 0, "operator": 0}
    assert s.attempts == ({"index": 0, "startTime": "2026-01-01T10:00:00Z"},)
    assert s.clock == deadline.RunClock(status_mod.parse_time("2026-01-01T10:00:00Z"), 7, None)
    assert list(s.conditions) == READ["conditions"]


@pytest.mark.parametrize(
    ("status", "initial", "phase"),
    [
        (None, None, JobPhase.PENDING),
        ({}, None, JobPhase.PENDING),
        (READ, JobPhase.RUNNING, JobPhase.RUNNING),
    ],
)
def test_a_job_without_a_phase_starts_pending(
    status: dict[str, Any] | None, initial: JobPhase | None, phase: JobPhase
) -> None:
    s = statuscodec.decode(None if status is None else JobStatus.from_wire(status))
    assert (s.initial_phase, s.phase) == (initial, phase)


def test_encode_rewrites_the_counters_and_keeps_what_it_does_not_own() -> None:
    read = statuscodec.decode(JobStatus.from_wire(READ))
    s = read._replace(phase=JobPhase.COMPLETING, reason=None, message=None)
    tally = status_mod.PodTally()
    tally.add("w", "Running", terminating=False)
    tally.add("w", "Succeeded", terminating=False)
    written = statuscodec.encode(
        READ,
        s,
        statuscodec.Counters(tally, min_available=2, succeeded={"w": frozenset({0})}),
        {"startTime": "2026-01-01T10:00:00Z", "suspendedSeconds": None, "reason": "Running"},
    )
    # reason and message left unset this round keep what was read
    assert written["state"] == {**READ["state"], "phase": "Completing"}
    assert (written["running"], written["succeeded"], written["pending"]) == (1, 1, 0)
    assert written["minAvailable"] == 2
    assert written["taskStatusCount"] == {"w": {"phase": {"Running": 1, "Succeeded": 1}}}
    assert written["succeededIndexes"] == {"w": "0"}
    assert written["somethingElse"] == {"kept": True}
    # a lifecycle field without a value is removed
    assert "suspendedSeconds" not in written
    assert written["reason"] == "Running"
    assert READ["state"]["phase"] == "Running"  # what was read is not changed


def test_encode_of_an_unchanged_decode_is_unchanged() -> None:
    s = statuscodec.decode(JobStatus.from_wire(READ))
    tally = status_mod.PodTally()
    written = statuscodec.encode(
        READ, s, statuscodec.Counters(tally, min_available=0, succeeded={"w": {0, 1, 2, 5}}), {}
    )
    for key in ("state", "version", "retryCount", "controlledResources", "conditions"):
        assert written[key] == READ[key]
