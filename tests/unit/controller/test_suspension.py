"""spec.suspend and spec.managedBy: the pure rules and the planner's handling of a suspended job."""

from __future__ import annotations

from typing import Any

import pytest
from builders import World, created_pods, job

from controller.job.decide import suspension
from shared import labels


@pytest.mark.parametrize(
    ("spec", "suspended"),
    [
        ({}, False),
        ({"suspend": False}, False),
        ({"suspend": True}, True),
        ({"suspend": "true"}, False),  # only a boolean true suspends
    ],
)
def test_is_suspended(spec: dict[str, Any], suspended: bool) -> None:
    assert suspension.is_suspended({"spec": spec}) is suspended


@pytest.mark.parametrize(
    ("managed_by", "other"),
    [
        (None, False),
        ("", False),
        (labels.MANAGED_BY_VCJOB, False),
        ("kueue.x-k8s.io/multikueue", True),
    ],
)
def test_managed_by_other(managed_by: str | None, other: bool) -> None:
    assert suspension.managed_by_other({"spec": {"managedBy": managed_by}}) is other


def test_with_condition_replaces_its_type_and_keeps_the_others() -> None:
    others = [{"type": "Ready", "status": "True", "reason": "R", "lastTransitionTime": "t0"}]
    first = suspension.with_condition(
        others,
        type_="Suspended",
        status=True,
        reason="JobSuspended",
        message="m1",
        now="t1",
        generation=3,
    )
    assert first == [
        others[0],
        {
            "type": "Suspended",
            "status": "True",
            "reason": "JobSuspended",
            "message": "m1",
            "lastTransitionTime": "t1",
            "observedGeneration": 3,
        },
    ]
    same_status = suspension.with_condition(
        first, type_="Suspended", status=True, reason="X", message="m2", now="t2", generation=4
    )
    assert same_status[1]["lastTransitionTime"] == "t1"  # no flip, no new transition time
    assert same_status[1]["message"] == "m2"
    flipped = suspension.with_condition(
        same_status, type_="Suspended", status=False, reason="R", message="", now="t3", generation=4
    )
    assert flipped[1]["status"] == "False" and flipped[1]["lastTransitionTime"] == "t3"
    assert flipped[0] == others[0]


def test_a_job_never_suspended_gets_no_suspended_condition() -> None:
    assert (
        suspension.suspended_conditions([], suspended=False, message="", now="t", generation=1)
        == []
    )


def _running_world() -> World:
    world = World(job("j").task("w", replicas=2).max_retry(3).build())
    world.step()
    world.admit()
    world.step()
    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    return world


def _typed(world: World) -> dict[str, Any]:
    found = suspension.find(world.status.get("typedConditions") or [], "Suspended")
    assert found is not None
    return dict(found)


def test_suspending_a_running_job_deletes_its_pods_and_keeps_its_attempt() -> None:
    world = _running_world()
    world.job["spec"]["suspend"] = True
    plan = world.step()
    assert sorted(r.name for r in plan.delete if r.kind == "Pod") == ["j-w-0", "j-w-1"]
    assert any(r.kind == "PodGroup" for r in plan.delete)
    assert world.phase == "Pending"
    assert world.status["state"]["reason"] == "Suspended"
    assert world.status["retryCount"] == 0 and world.status["version"] == 0
    assert _typed(world)["status"] == "True" and _typed(world)["reason"] == "JobSuspended"
    world.settle()
    assert world.pods == {} and world.pod_group is None  # nothing is created while suspended


def test_suspend_and_resume_ten_times_burns_no_retry() -> None:
    world = _running_world()
    for _ in range(10):
        world.job["spec"]["suspend"] = True
        world.settle(3)
        assert world.pods == {}
        world.job["spec"]["suspend"] = False
        world.settle(2)
        world.admit()
        plan = world.step()
        assert created_pods(plan) == ["j-w-0", "j-w-1"]
        world.set_all("Running")
        world.step()
        assert world.phase == "Running"
        assert world.status["retryCount"] == 0 and world.status["version"] == 0
    assert _typed(world)["status"] == "False" and _typed(world)["reason"] == "JobResumed"


def test_finished_pods_survive_a_suspension() -> None:
    world = _running_world()
    world.set_pod("j-w-0", "Succeeded")
    world.step()
    world.job["spec"]["suspend"] = True
    world.settle(3)
    assert list(world.pods) == ["j-w-0"]
    assert world.status["succeeded"] == 1
    world.job["spec"]["suspend"] = False
    world.settle(2)
    world.admit()
    assert created_pods(world.step()) == ["j-w-1"]


def test_a_job_created_suspended_has_no_pods() -> None:
    world = World(job("j").task("w", replicas=1).build())
    world.job["spec"]["suspend"] = True
    world.settle(4)
    assert world.pods == {} and world.pod_group is None
    assert world.phase == "Pending" and world.status["state"]["reason"] == "Suspended"
