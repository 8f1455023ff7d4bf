"""How many status writes a job costs: what only reports (pods turning Running, the scheduler's
admission) waits a moment for the next write."""

from __future__ import annotations

from datetime import timedelta

import pytest
from builders import T0, World, job

from controller.job.decide import typedconditions
from shared import conditions as cond

DELAY = typedconditions.REPORT_DELAY


def admitted(status: dict[str, object]) -> bool:
    return cond.is_true(status.get("typedConditions"), cond.ADMITTED)  # type: ignore[arg-type]


def started_world() -> World:
    """A job of a scheduler without a gang gate: its pods exist at once, Pending, not admitted."""
    world = World(job("j").scheduler("default-scheduler").task("w", 2).build())
    world.settle(2)
    assert len(world.pods) == 2 and world.phase == "Pending"
    assert not admitted(world.status)
    return world


def test_an_admission_alone_waits_then_is_written() -> None:
    world = started_world()
    world.admit()
    first = world.step(timedelta(0))
    assert first.status is None
    assert first.requeue_after == DELAY
    early = world.step(DELAY / 2)
    assert early.status is None
    assert early.requeue_after is not None and early.requeue_after <= DELAY / 2
    late = world.step(DELAY / 2)
    assert late.status is not None and admitted(late.status)
    assert world.memory is not None and "reportDue" not in world.memory


def test_an_admission_rides_on_the_write_of_the_pods_running() -> None:
    world = started_world()
    world.admit()
    assert world.step(timedelta(0)).status is None
    world.set_all("Running")
    plan = world.step(timedelta(milliseconds=200))
    assert plan.status is not None
    assert plan.status["state"]["phase"] == "Running" and admitted(plan.status)
    # One write for both; nothing is left to write afterwards.
    assert world.step(DELAY).status is None
    assert world.memory is not None and "reportDue" not in world.memory


def test_pods_turning_running_one_by_one_share_one_write() -> None:
    world = World(job("j").scheduler("default-scheduler").task("w", 3).min_available(1).build())
    world.settle(2)
    world.admit()
    world.set_pod("j-w-0", "Running")
    phase = world.step(timedelta(0))
    assert phase.status is not None and phase.status["state"]["phase"] == "Running"
    world.set_pod("j-w-1", "Running")
    assert world.step(timedelta(milliseconds=300)).status is None
    world.set_pod("j-w-2", "Running")
    assert world.step(timedelta(milliseconds=300)).status is None
    written = world.step(DELAY)
    assert written.status is not None
    assert (written.status["pending"], written.status["running"]) == (0, 3)
    assert world.step(DELAY).status is None


def test_a_gang_scheduled_job_writes_its_admission_with_its_pods() -> None:
    world = World(job("j").task("w", 2).build())
    world.settle(2)
    assert not world.pods
    world.admit()
    plan = world.step()
    assert len([o for o in plan.create if o["kind"] == "Pod"]) == 2
    assert plan.status is not None and admitted(plan.status)


BASE = {
    "state": {"phase": "Pending"},
    "pending": 1,
    "typedConditions": [
        {"type": "Admitted", "status": "False", "reason": "Waiting"},
        {"type": "Running", "status": "False", "reason": "Pending"},
    ],
}
ADMITTED = {
    **BASE,
    "typedConditions": [
        {"type": "Admitted", "status": "True", "reason": "Admitted"},
        {"type": "Running", "status": "False", "reason": "Pending"},
    ],
}


@pytest.mark.parametrize(
    ("old", "new", "due", "wait"),
    [
        # the admission alone: first seen, then half-way, then due
        (BASE, ADMITTED, None, DELAY),
        (BASE, ADMITTED, T0 + DELAY / 2, DELAY / 2),
        (BASE, ADMITTED, T0, None),
        # pods moving from pending to running, with or without the admission, wait too
        (BASE, {**ADMITTED, "pending": 0, "running": 1}, None, DELAY),
        (BASE, {**BASE, "pending": 0, "running": 1}, T0 + DELAY, DELAY),
        # anything else changing with it is written at once: pods created or gone, a phase,
        # another condition
        (BASE, {**ADMITTED, "pending": 2}, None, None),
        (BASE, {**BASE, "pending": 0, "succeeded": 1}, None, None),
        (BASE, {**ADMITTED, "state": {"phase": "Running"}}, None, None),
        (
            BASE,
            {**ADMITTED, "typedConditions": [*ADMITTED["typedConditions"], {"type": "Blocked"}]},
            None,
            None,
        ),
        # losing the admission, or any other change alone, is written at once
        (ADMITTED, BASE, None, None),
        (BASE, {**BASE, "pending": 0}, None, None),
    ],
)
def test_admission_report_wait(
    old: dict[str, object], new: dict[str, object], due: object, wait: timedelta | None
) -> None:
    assert typedconditions.report_wait(old, new, due, T0) == wait  # type: ignore[arg-type]
