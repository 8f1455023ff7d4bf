"""Success rules: KEP-3998's interval cases adapted to tasks, and the lifecycle around them."""

from __future__ import annotations

import pytest
from builders import World, deleted_pods, job, plan_for, pod_of, rounds

from controller.job.decide.successpolicy import evaluate
from shared import indexranges
from shared.models import SuccessPolicy


def policy(*rules: dict[str, object]) -> SuccessPolicy:
    return SuccessPolicy.from_wire({"rules": list(rules)})


def done(text: str) -> dict[str, set[int]]:
    return {"w": indexranges.expand(text)}


@pytest.mark.parametrize(
    ("succeeded", "rules", "met"),
    [
        ("0-2,4-7", [{"succeededIndexes": "0-2"}], 0),
        ("0-2", [{"succeededIndexes": "3"}], None),
        ("0-2", [{"succeededCount": 2}], 0),
        ("0-2", [{"succeededCount": 4}], None),
        ("0-2,4-7", [{"succeededIndexes": "9"}, {"succeededIndexes": "4,6"}], 1),
        ("0-2,4-7", [{"succeededIndexes": "3-6", "succeededCount": 2}], 0),
        ("0-2,6,7", [{"succeededIndexes": "3-6", "succeededCount": 2}], None),
        ("1-3,7,8", [{"succeededIndexes": "0-4,6-9"}], None),
        ("1-3,7,8", [{"succeededIndexes": "0-4,6-9", "succeededCount": 5}], 0),
        ("", [{"succeededCount": 1}], None),
    ],
    ids=[
        "indexes all in",
        "index missing",
        "count reached",
        "count short",
        "second rule wins",
        "indexes+count reached",
        "indexes+count short",
        "split intervals short",
        "split intervals count",
        "nothing succeeded",
    ],
)
def test_kep_interval_cases(
    succeeded: str, rules: list[dict[str, object]], met: int | None
) -> None:
    result = evaluate(policy(*rules), ["w"], done(succeeded))
    assert (result.index if result else None) == met


def test_rules_name_tasks_and_count_the_whole_job() -> None:
    succeeded = {"master": {0}, "worker": {1, 2}}
    tasks = ["master", "worker"]
    assert evaluate(policy({"taskName": "worker", "succeededCount": 3}), tasks, succeeded) is None
    whole = evaluate(policy({"succeededCount": 3}), tasks, succeeded)
    assert whole is not None
    assert whole.message == "rule 0 met: 3 pods of the job succeeded"
    by_task = evaluate(policy({"taskName": "master", "succeededIndexes": "0"}), tasks, succeeded)
    assert by_task is not None
    assert by_task.message == "rule 0 met: task master indexes 0 succeeded"


def test_met_rule_terminates_lingering_pods_then_completes() -> None:
    j = (
        job("j")
        .task("master")
        .task("worker", 2)
        .success_rule(task="master", indexes="0")
        .phase("Running")
        .build()
    )
    pods = [
        pod_of(j, "master", 0, phase="Succeeded"),
        pod_of(j, "worker", 0),
        pod_of(j, "worker", 1, phase="Failed", exit_code=1),
    ]
    plans = rounds(j, pods)
    plan = plans[0]
    assert plan.status is not None
    assert plan.status["state"] == {
        "phase": "Completing",
        "reason": "SuccessPolicy",
        "message": "rule 0 met: task master indexes 0 succeeded",
        "lastTransitionTime": plan.status["state"]["lastTransitionTime"],
    }
    assert deleted_pods(plan) == []
    assert [n for p in plans for n in deleted_pods(p)] == ["j-worker-0"]


def test_failure_policies_are_evaluated_first() -> None:
    j = (
        job("j")
        .task("master")
        .task("worker", 2)
        .success_rule(task="master", indexes="0")
        .policy(event="PodFailed", action="AbortJob")
        .phase("Running")
        .build()
    )
    pods = [
        pod_of(j, "master", 0, phase="Succeeded"),
        pod_of(j, "worker", 0),
        pod_of(j, "worker", 1, phase="Failed", exit_code=1),
    ]
    plan = plan_for(j, pods)
    assert plan.status is not None
    assert plan.status["state"]["phase"] == "Aborting"


def test_success_policy_end_to_end() -> None:
    world = World(
        job("j").task("master").task("worker", 3).success_rule(task="master", indexes="0").build()
    )
    world.step()
    world.admit()
    world.step()
    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    world.set_pod("j-master-0", "Succeeded")
    world.step()
    assert world.phase == "Completing"
    world.settle(2)
    assert world.phase == "Completed"
    assert world.status["state"]["reason"] == "SuccessPolicy"
    # The REASON column says what completed the job while its workers still ran.
    assert world.status["reason"] == "SuccessPolicy"
    assert world.status["succeededIndexes"] == {"master": "0"}
    assert list(world.pods) == ["j-master-0"]
