"""`controller.job.decide.phasesync`: Restarting, suspended, draining and finished jobs carried
out."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from builders import UID, job, observe, pod_group_of, pod_of

from controller.job.decide import phasesync, restarts, steps
from controller.job.decide.model import PlanSettings
from shared.models import JobPhase, PolicyAction

SETTINGS = PlanSettings()


def start(j: dict[str, Any], pods: list[dict[str, Any]], **kw: Any) -> tuple[Any, Any]:
    return steps.start(observe(j, pods, **kw), SETTINGS)


@pytest.mark.parametrize(
    ("phase", "pods_left", "next_phase", "pod_group_deleted"),
    [
        ("Aborting", [], JobPhase.ABORTED, True),
        ("Aborting", ["Running"], JobPhase.ABORTING, True),
        ("Completing", [], JobPhase.COMPLETED, False),
        ("Terminating", ["Succeeded"], JobPhase.TERMINATED, False),
        ("Terminating", ["Running"], JobPhase.TERMINATING, False),
    ],
)
def test_draining(
    phase: str, pods_left: list[str], next_phase: JobPhase, pod_group_deleted: bool
) -> None:
    j = job().task("w", 2).phase(phase).build()
    pods = [pod_of(j, "w", i, phase=p) for i, p in enumerate(pods_left)]
    seen, draft = start(j, pods)
    draft = phasesync.sync(seen, draft)
    assert draft.status.phase == next_phase
    assert any(ref.kind == "PodGroup" for ref in draft.effects.delete) is pod_group_deleted
    unfinished = {p["metadata"]["name"] for p in pods if p["status"]["phase"] == "Running"}
    assert draft.deleting == unfinished


def restarting(record: restarts.RestartRecord | None, **status: Any) -> dict[str, Any]:
    controlled = {restarts.RECORD_KEY: restarts.encode(record)} if record else {}
    return (
        job()
        .task("w", 2)
        .max_retry(3)
        .phase("Restarting", version=1, controlledResources=controlled, **status)
        .build()
    )


def test_a_full_restart_deletes_the_old_pods_and_the_pod_group_then_goes_pending() -> None:
    j = restarting(restarts.RestartRecord(PolicyAction.RESTART_JOB), retryCount=1)
    old = [pod_of(j, "w", 0, version=0), pod_of(j, "w", 1, version=0)]
    seen, draft = start(j, old)
    draft, moved = phasesync.sync_restarting(seen, draft)
    assert not moved
    assert draft.deleting == {"j-w-0", "j-w-1"}
    assert any(ref.kind == "PodGroup" for ref in draft.effects.delete)
    # once the pods and the PodGroup are gone, Pending is written
    seen, draft = start(j, [], pod_group=None)
    draft, moved = phasesync.sync_restarting(seen, draft)
    assert moved
    assert (draft.status.phase, draft.status.reason) == (JobPhase.PENDING, "Restarted")
    assert draft.status.restart is None


def test_a_targeted_restart_keeps_the_pod_group() -> None:
    j = restarting(restarts.RestartRecord(PolicyAction.RESTART_POD, pods=frozenset({"j-w-0"})))
    seen, draft = start(j, [pod_of(j, "w", 0, version=1), pod_of(j, "w", 1, version=1)])
    draft, _ = phasesync.sync_restarting(seen, draft)
    assert draft.deleting == {"j-w-0"}
    assert not any(ref.kind == "PodGroup" for ref in draft.effects.delete)


def test_retries_exhausted_fail_the_job() -> None:
    j = restarting(restarts.RestartRecord(PolicyAction.RESTART_JOB), retryCount=3)
    seen, draft = start(j, [pod_of(j, "w", 0, phase="Running")])
    draft, moved = phasesync.sync_restarting(seen, draft)
    assert moved
    assert (draft.status.phase, draft.status.reason) == (JobPhase.FAILED, "MaxRetryExceeded")


@pytest.mark.parametrize(
    ("retries", "message"),
    [
        (1, "the job was restarted 1 time, maxRetry is 1"),
        (2, "the job was restarted 2 times, maxRetry is 2"),
    ],
)
def test_the_failure_message_counts_the_restarts_in_words(retries: int, message: str) -> None:
    j = (
        job()
        .task("w", 2)
        .max_retry(retries)
        .phase("Restarting", version=1, retryCount=retries)
        .build()
    )
    seen, draft = start(j, [])
    draft, moved = phasesync.sync_restarting(seen, draft)
    assert moved
    assert (draft.status.phase, draft.status.message) == (JobPhase.FAILED, message)


def test_a_suspended_job_has_no_pods_and_no_pod_group() -> None:
    b = job().task("w", 2).phase("Running")
    b.spec["suspend"] = True
    j = b.build()
    seen, draft = start(j, [pod_of(j, "w", 0), pod_of(j, "w", 1, phase="Succeeded", exit_code=0)])
    draft = phasesync.sync(seen, draft)
    assert draft.deleting == {"j-w-0"}
    assert any(ref.kind == "PodGroup" for ref in draft.effects.delete)
    assert (draft.status.phase, draft.status.reason) == (JobPhase.PENDING, "Suspended")


def test_finish_deletes_the_plugin_objects_and_waits_for_the_ttl() -> None:
    j = job().task("w", 1).ttl(60).phase("Completed").build()
    owner = [{"kind": "Job", "name": "j", "uid": UID, "controller": True}]
    children = {
        ("Service", "j"): {
            "kind": "Service",
            "metadata": {"name": "j", "uid": "s", "ownerReferences": owner},
        },
        ("ConfigMap", "j-svc"): {
            "kind": "ConfigMap",
            "metadata": {"name": "j-svc", "uid": "c", "ownerReferences": owner},
        },
        ("ConfigMap", "user"): {"kind": "ConfigMap", "metadata": {"name": "user", "uid": "u"}},
    }
    seen, draft = start(j, [], children=children)
    draft = phasesync.finish(seen, draft)
    deleted = {(ref.kind, ref.name) for ref in draft.effects.delete}
    assert deleted == {
        ("PodGroup", pod_group_of(j)["metadata"]["name"]),
        ("Service", "j"),
        ("ConfigMap", "j-svc"),
    }
    assert not draft.effects.delete_job
    assert draft.effects.requeue == (timedelta(seconds=30),)  # finished 30s ago, ttl 60s
