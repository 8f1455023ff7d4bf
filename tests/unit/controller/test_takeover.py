"""A Job Volcano's controller ran before vcjob's: the run clock and the first attempt take the
times Volcano's status and the Job's pods recorded, not the time of the takeover."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import T0, World, job, pod_of, ts

from controller.job.decide import deadline, takeover
from shared.models import JobPhase

NOW = datetime(2026, 1, 1, 13, 0, 0, tzinfo=UTC)
EARLY = NOW - timedelta(minutes=50)
LATER = NOW - timedelta(minutes=10)


def condition(phase: str, at: datetime) -> dict[str, Any]:
    return {"status": phase, "lastTransitionTime": ts(at)}


def pod(
    phase: str, *, started: datetime | None = None, created: datetime = EARLY
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if started is not None:
        status["startTime"] = ts(started)
    return {"metadata": {"name": "p", "creationTimestamp": ts(created)}, "status": status}


@pytest.mark.parametrize(
    ("attempts", "phase", "expected"),
    [
        ([], None, False),  # a new Job: vcjob's own first round
        ([], JobPhase.RUNNING, True),  # a phase, but no attempt recorded: another controller's
        ([{"index": 0, "startTime": ts(EARLY)}], JobPhase.RUNNING, False),
    ],
)
def test_inherited(attempts: list[dict[str, Any]], phase: JobPhase | None, expected: bool) -> None:
    assert takeover.inherited(attempts, phase) is expected


@pytest.mark.parametrize(
    ("conditions", "pods", "expected"),
    [
        ([], [], None),
        ([condition("Pending", EARLY)], [pod("Pending")], None),
        ([condition("Pending", EARLY), condition("Running", LATER)], [], LATER),
        ([condition("Running", LATER)], [pod("Running", started=EARLY)], EARLY),
        ([], [pod("Succeeded", started=LATER), pod("Failed", started=EARLY)], EARLY),
        # A pod with a start time the kubelet has not yet reported running does not count.
        ([], [pod("Pending", started=EARLY)], None),
    ],
)
def test_first_run(
    conditions: list[dict[str, Any]], pods: list[dict[str, Any]], expected: datetime | None
) -> None:
    assert takeover.first_run(conditions, pods) == expected


@pytest.mark.parametrize(
    ("retry_count", "pods", "expected"),
    [
        (0, [], T0 - timedelta(minutes=1)),  # the Job's creation (the builder's)
        (2, [pod("Running", created=LATER), pod("Running", created=EARLY)], EARLY),
        (2, [], NOW),  # restarted, no pod yet: nothing older to go by
    ],
)
def test_attempt_start(retry_count: int, pods: list[dict[str, Any]], expected: datetime) -> None:
    assert takeover.attempt_start(job("j").build(), pods, retry_count, NOW) == expected


def test_the_clock_starts_when_the_job_first_ran_not_after_now() -> None:
    clock = deadline.RunClock()
    assert (
        deadline.advance(clock, running=False, suspended=False, now=NOW, ran_since=EARLY).start
        == EARLY
    )
    ahead = NOW + timedelta(seconds=5)  # another node's clock
    assert (
        deadline.advance(clock, running=True, suspended=False, now=NOW, ran_since=ahead).start
        == NOW
    )
    started = deadline.RunClock(start=LATER)
    assert (
        deadline.advance(started, running=True, suspended=False, now=NOW, ran_since=EARLY)
        == started
    )


def volcano_running_job() -> World:
    """A Job Volcano's controller started: its status has Volcano's fields only."""
    built = (
        job("j")
        .task("w", 2)
        .phase(
            "Running",
            conditions=[
                condition("Pending", T0 - timedelta(seconds=58)),
                condition("Running", T0 - timedelta(seconds=40)),
            ],
            minAvailable=2,
            running=2,
        )
    )
    j = built.build()
    world = World(j)
    for index in range(2):
        p = pod_of(j, "w", index, created=T0 - timedelta(seconds=55))
        p["status"]["startTime"] = ts(T0 - timedelta(seconds=45))
        world.pods[p["metadata"]["name"]] = p
    return world


def test_a_running_job_taken_over_keeps_its_start() -> None:
    world = volcano_running_job()
    world.pod_group = None
    world.step(timedelta(minutes=5))
    status = world.status
    assert world.phase == "Running"
    assert status["startTime"] == ts(T0 - timedelta(seconds=45))
    assert status["attempts"][0]["startTime"] == ts(T0 - timedelta(minutes=1))
    # Recorded once: later rounds keep them.
    world.step(timedelta(minutes=5))
    assert world.status["startTime"] == status["startTime"]
    assert world.status["attempts"] == status["attempts"]


def test_a_finished_job_taken_over_does_not_start_after_it_ended() -> None:
    built = (
        job("j")
        .task("w", 1)
        .phase(
            "Completed",
            conditions=[
                condition("Running", T0 - timedelta(seconds=40)),
                condition("Completed", T0 - timedelta(seconds=30)),
            ],
        )
    )
    world = World(built.build())
    world.step(timedelta(hours=1))
    status = world.status
    assert world.phase == "Completed"
    assert status["startTime"] == ts(T0 - timedelta(seconds=40))
    (attempt,) = status["attempts"]
    assert attempt["startTime"] <= attempt["endTime"] == ts(T0 - timedelta(seconds=30))
