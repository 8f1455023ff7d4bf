"""Kueue's external-framework contract as pure functions: the Workload built from a job, what
Kueue's decisions on it ask of the job, and the planner carrying them out."""

from __future__ import annotations

from typing import Any

import pytest
from builders import UID, World, created_pods, job

from controller.job.decide import kueue, suspension
from shared import labels

NOW = "2026-01-01T12:00:00Z"


def queued(name: str = "j", replicas: int = 2, **task: Any) -> dict[str, Any]:
    built = job(name).task("w", replicas=replicas, cpu="1", **task).build()
    built["metadata"]["labels"] = {labels.KUEUE_QUEUE_NAME_KEY: "lq"}
    built["spec"]["suspend"] = True
    return built


def condition(type_: str, status: str, reason: str = "R", message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def workload(*conditions: dict[str, Any], admission: bool = False) -> dict[str, Any]:
    wl = kueue.build_workload(queued(), {})
    wl["metadata"]["resourceVersion"] = "7"
    wl["status"] = {"conditions": list(conditions)}
    if admission:
        wl["status"]["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "w", "flavors": {"cpu": "zone-a"}, "count": 2}],
        }
    return wl


def test_the_workload_has_one_pod_set_per_task_owned_by_the_job() -> None:
    built = job("j").task("a", replicas=3, cpu="1", min_available=2).task("b", replicas=1).build()
    built["metadata"]["labels"] = {labels.KUEUE_QUEUE_NAME_KEY: "lq"}
    built["spec"]["priorityClassName"] = "high"
    wl = kueue.build_workload(built, {"high": 1000})
    assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta2" and wl["kind"] == "Workload"
    assert wl["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "j",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    spec = wl["spec"]
    assert spec["queueName"] == "lq"
    assert [(p["name"], p["count"], p.get("minCount")) for p in spec["podSets"]] == [
        ("a", 3, 2),
        ("b", 1, None),
    ]
    assert spec["podSets"][0]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"}
    }
    assert spec["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "high",
    }
    assert spec["priority"] == 1000


def test_only_one_pod_set_may_carry_min_count() -> None:
    built = job("j").task("a", replicas=3, min_available=1).task("b", 3, min_available=2).build()
    built["metadata"]["labels"] = {labels.KUEUE_QUEUE_NAME_KEY: "lq"}
    assert all("minCount" not in p for p in kueue.build_workload(built, {})["spec"]["podSets"])


def steps(
    job_: dict[str, Any],
    wl: dict[str, Any] | None,
    *,
    finished: bool | None = None,
    pods_gone: bool = True,
    flavors: dict[str, Any] | None = None,
) -> kueue.KueueSteps:
    return kueue.plan_kueue(
        job_,
        wl,
        flavors or {},
        priority_values={},
        finished=finished,
        finish_message="done",
        pods_gone=pods_gone,
        now=NOW,
    )


def unsuspended(j: dict[str, Any]) -> dict[str, Any]:
    j["spec"]["suspend"] = False
    return j


@pytest.mark.parametrize(
    ("case", "job_", "wl", "pods_gone", "create", "set_suspend", "writes_status"),
    [
        ("no label: nothing", job("j").task("w").build(), None, True, False, None, False),
        ("new: Workload created", queued(), None, True, True, None, False),
        ("new, running: suspended", unsuspended(queued()), None, True, True, True, False),
        (
            "waiting: stays suspended",
            queued(),
            workload(condition("QuotaReserved", "False", "Pending", "insufficient quota")),
            True,
            False,
            None,
            False,
        ),
        (
            "admitted: unsuspended",
            queued(),
            workload(
                condition("QuotaReserved", "True"), condition("Admitted", "True"), admission=True
            ),
            True,
            False,
            False,
            False,
        ),
        (
            "admitted and running: nothing",
            unsuspended(queued()),
            workload(
                condition("QuotaReserved", "True"), condition("Admitted", "True"), admission=True
            ),
            True,
            False,
            None,
            False,
        ),
        (
            "evicted while running: suspended",
            unsuspended(queued()),
            workload(
                condition("Admitted", "True"),
                condition("Evicted", "True", "Preempted", "preempted by a higher priority"),
                admission=True,
            ),
            False,
            False,
            True,
            False,
        ),
        (
            "evicted, pods still going: wait",
            queued(),
            workload(condition("Admitted", "True"), condition("Evicted", "True"), admission=True),
            False,
            False,
            None,
            False,
        ),
        (
            "evicted, pods gone: admission cleared",
            queued(),
            workload(condition("Admitted", "True"), condition("Evicted", "True"), admission=True),
            True,
            False,
            None,
            True,
        ),
    ],
)
def test_what_kueue_asks_of_the_job(
    case: str,
    job_: dict[str, Any],
    wl: dict[str, Any] | None,
    pods_gone: bool,
    create: bool,
    set_suspend: bool | None,
    writes_status: bool,
) -> None:
    got = steps(job_, wl, pods_gone=pods_gone)
    assert (got.create_workload is not None, got.set_suspend, got.workload_status is not None) == (
        create,
        set_suspend,
        writes_status,
    ), case


def test_a_waiting_job_says_kueues_reason() -> None:
    wl = workload(condition("QuotaReserved", "False", "Pending", "insufficient unused quota"))
    assert steps(queued(), wl).waiting_message == (
        "queued by Kueue in LocalQueue lq: insufficient unused quota"
    )


def test_clearing_an_eviction_drops_the_admission_as_kueue_does() -> None:
    wl = workload(
        condition("QuotaReserved", "True"),
        condition("Admitted", "True"),
        condition("Evicted", "True", "Preempted", "preempted"),
        admission=True,
    )
    status = steps(queued(), wl).workload_status
    assert status is not None
    assert status["metadata"]["resourceVersion"] == "7"
    assert "admission" not in status["status"]
    by_type = {c["type"]: c for c in status["status"]["conditions"]}
    assert (by_type["QuotaReserved"]["status"], by_type["QuotaReserved"]["reason"]) == (
        "False",
        "Pending",
    )
    assert by_type["Admitted"]["status"] == "False"
    assert by_type["Evicted"]["status"] == "True"  # Kueue's own condition is kept


@pytest.mark.parametrize(("succeeded", "reason"), [(True, "Succeeded"), (False, "Failed")])
def test_a_finished_job_finishes_its_workload(succeeded: bool, reason: str) -> None:
    wl = workload(condition("Admitted", "True"), admission=True)
    status = steps(unsuspended(queued()), wl, finished=succeeded).workload_status
    assert status is not None
    finished = suspension.find(status["status"]["conditions"], "Finished")
    assert finished is not None and (finished["status"], finished["reason"]) == ("True", reason)
    done = workload(condition("Finished", "True"))
    assert steps(unsuspended(queued()), done, finished=succeeded).workload_status is None


def test_admitted_pods_get_the_flavors_node_labels_and_tolerations() -> None:
    wl = workload(condition("Admitted", "True"), admission=True)
    toleration = {"key": "zone", "operator": "Exists", "effect": "NoSchedule"}
    flavors = {"zone-a": {"spec": {"nodeLabels": {"zone": "a"}, "tolerations": [toleration]}}}
    got = steps(queued(), wl, flavors=flavors)
    override = got.overrides["w"]
    pod = kueue.apply_override(
        {"metadata": {}, "spec": {"nodeSelector": {"disk": "ssd"}}}, override
    )
    assert pod["spec"]["nodeSelector"] == {"disk": "ssd", "zone": "a"}
    assert pod["spec"]["tolerations"] == [toleration]


def test_the_planner_creates_the_workload_and_runs_only_once_admitted() -> None:
    world = World(queued())
    world.settle(3)
    workloads = [o for k, o in world.children.items() if k[0] == "Workload"]
    assert len(workloads) == 1
    assert world.pods == {} and world.status["state"]["reason"] == "Suspended"
    wl = workloads[0]
    wl["status"] = {
        "conditions": [condition("QuotaReserved", "True"), condition("Admitted", "True")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "w", "flavors": {}}]},
    }
    world_observe = world.observe

    def observe_with_workload() -> Any:
        from dataclasses import replace

        return replace(world_observe(), workload=wl)

    world.observe = observe_with_workload  # type: ignore[method-assign]
    plan = world.step()
    assert plan.job_spec_patch == {"spec": {"suspend": False}}
    world.step()
    world.admit()
    assert created_pods(world.step()) == ["j-w-0", "j-w-1"]


def test_once_the_eviction_is_carried_out_the_job_waits_with_kueues_new_reason() -> None:
    wl = workload(
        condition("QuotaReserved", "False", "Pending", "insufficient unused quota"),
        condition("Admitted", "False"),
        condition("Evicted", "True", "Preempted", "preempted"),
    )
    got = steps(queued(), wl)
    assert (got.set_suspend, got.workload_status) == (None, None)
    assert got.waiting_message == "queued by Kueue in LocalQueue lq: insufficient unused quota"


def test_without_the_kueue_integration_a_labelled_job_gets_no_workload() -> None:
    from controller.job.decide.model import PlanSettings

    world = World(queued(), settings=PlanSettings(kueue=False))
    world.settle(3)
    assert [k for k in world.children if k[0] == "Workload"] == []
    assert world.pods == {} and world.status["state"]["reason"] == "Suspended"


def test_a_partial_admission_creates_only_the_admitted_pods() -> None:
    from dataclasses import replace

    world = World(unsuspended(queued(replicas=3, min_available=1)))
    wl = kueue.build_workload(world.job, {})
    assert wl["spec"]["podSets"][0]["minCount"] == 1
    wl["status"] = {
        "conditions": [condition("QuotaReserved", "True"), condition("Admitted", "True")],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "w", "count": 2}]},
    }
    world_observe = world.observe
    world.observe = lambda: replace(world_observe(), workload=wl)  # type: ignore[method-assign]
    world.step()
    world.admit()
    assert created_pods(world.step()) == ["j-w-0", "j-w-1"]


@pytest.mark.parametrize(
    ("reason", "requeued"),
    [
        ("Preempted", "True"),
        ("NodeFailures", "True"),
        # Kueue's workload controller requeues these after their backoff.
        ("AdmissionCheck", "False"),
        ("PodsReadyTimeout", "False"),
    ],
)
def test_clearing_an_eviction_says_whether_kueue_requeues_it_at_once(
    reason: str, requeued: str
) -> None:
    wl = workload(
        condition("QuotaReserved", "True"),
        condition("Evicted", "True", reason, "why"),
        admission=True,
    )
    status = steps(queued(), wl).workload_status
    assert status is not None
    by_type = {c["type"]: c for c in status["status"]["conditions"]}
    assert (by_type["Requeued"]["status"], by_type["Requeued"]["reason"]) == (requeued, reason)
