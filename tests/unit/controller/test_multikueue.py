"""Kueue's MultiKueue as vcjob sees it: on the manager, a dispatched job gets only Kueue's steps
(its Workload, suspend, Finished from the mirrored status); on a worker, the copy uses and adopts
the Workload MultiKueue made for it and never makes its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import UID, job

from controller.job.decide import kueue, multikueue
from shared import labels

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
PREBUILT = "job-j-abcde"


def dispatched(phase: str | None = None, *, suspend: bool = True) -> dict[str, Any]:
    built = job("j").task("w", replicas=2, cpu="1").build()
    built["metadata"]["labels"] = {labels.KUEUE_QUEUE_NAME_KEY: "lq"}
    built["spec"]["suspend"] = suspend
    built["spec"]["managedBy"] = labels.MANAGED_BY_MULTIKUEUE
    if phase is not None:
        built["status"] = {"state": {"phase": phase}}
    return built


def worker_copy(*, suspend: bool = True) -> dict[str, Any]:
    built = job("j").task("w", replicas=2, cpu="1").build()
    built["metadata"]["labels"] = {
        labels.KUEUE_QUEUE_NAME_KEY: "lq",
        labels.KUEUE_PREBUILT_WORKLOAD_KEY: PREBUILT,
    }
    built["spec"]["suspend"] = suspend
    return built


def workload(*conditions: tuple[str, str], owned_by: str | None = UID) -> dict[str, Any]:
    wl = kueue.build_workload(dispatched(), {})
    wl["metadata"]["resourceVersion"] = "7"
    if owned_by is None:
        wl["metadata"]["name"] = PREBUILT
        del wl["metadata"]["ownerReferences"]
    else:
        wl["metadata"]["ownerReferences"][0]["uid"] = owned_by
    wl["status"] = {
        "conditions": [
            {"type": t, "status": s, "reason": "R", "message": ""} for t, s in conditions
        ]
    }
    return wl


ADMITTED = (("QuotaReserved", "True"), ("Admitted", "True"))
EVICTED = (("QuotaReserved", "True"), ("Evicted", "True"))


@pytest.mark.parametrize(
    ("case", "job_", "expected"),
    [
        ("managedBy multikueue with a LocalQueue", dispatched(), True),
        ("no LocalQueue: Kueue has nothing to dispatch", job("j").task("w").build(), False),
        ("vcjob's own", worker_copy(), False),
    ],
)
def test_dispatched(case: str, job_: dict[str, Any], expected: bool) -> None:
    assert multikueue.dispatched(job_) is expected, case


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        (None, None),
        ("Running", None),
        ("Completed", True),
        ("Failed", False),
        ("Terminated", False),
    ],
)
def test_mirrored_outcome(phase: str | None, expected: bool | None) -> None:
    assert multikueue.mirrored_outcome(dispatched(phase)) is expected


def plan(job_: dict[str, Any], wl: dict[str, Any] | None) -> Any:
    return multikueue.plan_dispatched(job_, wl, priority_values={}, now=NOW)


def test_the_manager_creates_the_workload_and_nothing_else() -> None:
    made = plan(dispatched(), None)
    assert [o["kind"] for o in made.create] == ["Workload"]
    assert made.status is None and made.job_spec_patch is None and not made.events


def test_the_manager_resumes_an_admitted_job_and_writes_no_status() -> None:
    made = plan(dispatched(), workload(*ADMITTED))
    assert made.job_spec_patch == {"spec": {"suspend": False}}
    assert made.create == [] and made.status is None and made.workload_status is None


@pytest.mark.parametrize("suspend", [False, True])
def test_an_eviction_is_carried_out_in_one_pass_on_the_manager(suspend: bool) -> None:
    """Suspended and its admission cleared together: there is no pod to wait for."""
    made = plan(dispatched(suspend=suspend), workload(*EVICTED))
    assert made.job_spec_patch == (None if suspend else {"spec": {"suspend": True}})
    status = made.workload_status
    assert status is not None and "admission" not in status["status"]
    reserved = next(c for c in status["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert reserved["status"] == "False"


def test_a_mirrored_completion_finishes_the_workload() -> None:
    made = plan(dispatched("Completed", suspend=False), workload(*ADMITTED))
    status = made.workload_status
    assert status is not None
    finished = next(c for c in status["status"]["conditions"] if c["type"] == "Finished")
    assert finished["reason"] == "Succeeded"


def test_a_finished_job_whose_workload_is_gone_is_not_dispatched_again() -> None:
    assert multikueue.writes_nothing(plan(dispatched("Completed"), None))


def finished_at(phase: str, seconds_ago: int, ttl: int | None) -> dict[str, Any]:
    built = dispatched(phase, suspend=False)
    when = (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    built["status"]["state"]["lastTransitionTime"] = when
    if ttl is not None:
        built["spec"]["ttlSecondsAfterFinished"] = ttl
    return built


FINISHED = (("QuotaReserved", "True"), ("Admitted", "True"), ("Finished", "True"))


@pytest.mark.parametrize(
    ("case", "job_", "delete", "requeue"),
    [
        ("no TTL", finished_at("Completed", 100, None), False, None),
        ("TTL not yet over", finished_at("Completed", 40, 60), False, timedelta(seconds=20)),
        ("TTL over", finished_at("Failed", 61, 60), True, None),
        ("still running: no TTL yet", dispatched("Running", suspend=False), False, None),
    ],
)
def test_a_dispatched_jobs_ttl_runs_from_its_mirrored_finish(
    case: str, job_: dict[str, Any], delete: bool, requeue: timedelta | None
) -> None:
    made = plan(job_, workload(*FINISHED))
    assert (made.delete_job, made.requeue_after) == (delete, requeue), case


def kueue_steps(job_: dict[str, Any], wl: dict[str, Any] | None) -> kueue.KueueSteps:
    return kueue.plan_kueue(
        job_,
        wl,
        {},
        priority_values={},
        finished=None,
        finish_message="",
        pods_gone=True,
        now="2026-01-01T12:00:00Z",
    )


def test_a_worker_copy_waits_for_its_prebuilt_workload_and_makes_none() -> None:
    steps = kueue_steps(worker_copy(suspend=False), None)
    assert steps.create_workload is None
    assert steps.set_suspend is True
    assert steps.requeue_after == timedelta(seconds=2)
    assert steps.waiting_message is not None and PREBUILT in steps.waiting_message


def test_a_worker_copy_adopts_its_prebuilt_workload_and_runs_when_admitted() -> None:
    steps = kueue_steps(worker_copy(), workload(*ADMITTED, owned_by=None))
    adopted = steps.adopt_workload
    assert adopted is not None
    assert adopted["metadata"]["resourceVersion"] == "7"
    assert kueue.is_controlled_by(adopted, worker_copy())
    assert adopted["metadata"]["labels"][kueue.JOB_UID_KEY] == UID
    assert steps.set_suspend is False and steps.create_workload is None


def test_an_adopted_workload_is_not_adopted_again() -> None:
    assert kueue_steps(worker_copy(), workload(*ADMITTED)).adopt_workload is None
