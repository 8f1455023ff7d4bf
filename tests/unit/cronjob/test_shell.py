"""The CronJob controller's writes, with a fake API: create and status, AlreadyExists, a Job
the webhook refuses, Replace's deletions, and the mapping of Job events to their CronJob."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.cronjob.shell import CRONJOBS, CronJobController
from kubeio.client import JOBS
from kubeio.clock import ManualClock
from kubeio.errors import KubeError
from kubeio.events import EventRecorder
from tests.support import FakeKube

NOW = datetime(2026, 1, 10, 9, 5, 10, tzinfo=UTC)


def given(controller: CronJobController, kube: FakeKube, obj: dict[str, Any]) -> None:
    """A CronJob in the API and, as its watch would deliver it, in the controller's informer."""
    controller.cronjobs.put(kube.put(CRONJOBS, obj))


def cronjob(policy: str = "Allow", active: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {
            "name": "nightly",
            "namespace": "ml",
            "uid": "cron-uid",
            "creationTimestamp": "2026-01-10T09:00:30Z",
        },
        "spec": {
            "schedule": "*/5 * * * *",
            "concurrencyPolicy": policy,
            "jobTemplate": {"spec": {"tasks": [{"name": "t", "replicas": 1}]}},
        },
        "status": {"active": active} if active else {},
    }


def owned_job(name: str, phase: str = "Running") -> dict[str, Any]:
    return {
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-01-10T09:00:00Z",
            "ownerReferences": [
                {"kind": "CronJob", "name": "nightly", "uid": "cron-uid", "controller": True}
            ],
        },
        "status": {"state": {"phase": phase}},
    }


@pytest.fixture
def setup() -> tuple[CronJobController, FakeKube]:
    kube = FakeKube()
    recorder = EventRecorder(kube, "test")
    clock = ManualClock(NOW)
    controller = CronJobController(
        kube,
        recorder,
        lambda: True,
        clock=clock,
        default_zone=UTC,
    )
    return controller, kube


def test_a_due_slot_creates_the_job_and_records_it(setup: Any) -> None:
    controller, kube = setup
    given(controller, kube, cronjob())
    requeue = controller.sync("ml/nightly")
    name = f"nightly-{int(datetime(2026, 1, 10, 9, 5, tzinfo=UTC).timestamp()) // 60}"
    assert kube.changes() == [("create", "jobs", name), ("patch/status", "cronjobs", "nightly")]
    status = kube.objects[("cronjobs", "ml", "nightly")]["status"]
    assert [a["name"] for a in status["active"]] == [name]
    assert status["active"][0]["uid"] == kube.stored(JOBS, "ml", name)["metadata"]["uid"]
    assert status["lastScheduleTime"] == "2026-01-10T09:05:00Z"
    assert ("Normal", "SuccessfulCreate") in [(t, r) for t, r, _ in kube.events()]
    assert requeue is not None and 289 < requeue.total_seconds() < 291


def test_an_existing_job_of_ours_is_taken_into_active(setup: Any) -> None:
    controller, kube = setup
    given(controller, kube, cronjob())
    controller.sync("ml/nightly")
    job_name = next(n for (p, _, n) in kube.objects if p == "jobs")
    kube.calls.clear()
    given(controller, kube, cronjob())  # the status write was lost
    controller.jobs.put({"metadata": {}})  # an unrelated object does not count
    controller.sync("ml/nightly")
    status = kube.objects[("cronjobs", "ml", "nightly")]["status"]
    assert [a["name"] for a in status["active"]] == [job_name]


def test_a_refused_create_is_an_event_and_an_error_and_the_slot_stays_due(setup: Any) -> None:
    controller, kube = setup
    kube.failures[("create", "jobs")] = [
        KubeError("admission webhook denied: the queue is Closed", 422)
    ]
    given(controller, kube, cronjob())
    with pytest.raises(KubeError):
        controller.sync("ml/nightly")
    assert ("Warning", "FailedCreate") in [(t, r) for t, r, _ in kube.events()]
    assert ("patch/status", "cronjobs", "nightly") not in kube.changes()


def test_replace_deletes_the_active_job_first(setup: Any) -> None:
    controller, kube = setup
    ref = {"name": "nightly-old", "uid": "uid-nightly-old", "kind": "Job"}
    given(controller, kube, cronjob("Replace", [ref]))
    controller.jobs.put(kube.put(JOBS, owned_job("nightly-old")))
    controller.sync("ml/nightly")
    assert kube.changes()[0] == ("delete", "jobs", "nightly-old")
    assert kube.changes()[1][0] == "create"
    assert ("Warning", "ReplaceConcurrent") in [(t, r) for t, r, _ in kube.events()]


def test_job_events_wake_their_cronjob(setup: Any) -> None:
    controller, _ = setup
    controller._on_job(None, owned_job("nightly-1"))
    assert controller.queue.get(timeout=0.1) == "ml/nightly"
    controller._on_job(None, {"metadata": {"name": "other", "namespace": "ml"}})
    assert controller.queue.get(timeout=0.05) is None


def test_a_deleted_cronjob_is_left_alone(setup: Any) -> None:
    controller, kube = setup
    assert controller.sync("ml/missing") is None
    assert kube.changes() == []
