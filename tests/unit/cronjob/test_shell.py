"""The CronJob controller's writes, with a fake API: create and status, AlreadyExists, a Job
the webhook refuses, Replace's deletions, and the mapping of Job events to their CronJob."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.cronjob.shell import CronJobController
from kubeio.client import Resource
from kubeio.clock import ManualClock
from kubeio.errors import AlreadyExistsError, KubeError

NOW = datetime(2026, 1, 10, 9, 5, 10, tzinfo=UTC)


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.refuse_create: KubeError | None = None

    def create(self, res: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        self.calls.append(("create", res.plural, name))
        if self.refuse_create is not None:
            raise self.refuse_create
        if (res.plural, namespace, name) in self.objects:
            raise AlreadyExistsError(f"{name} exists", 409)
        stored = {**body, "metadata": {**body["metadata"], "uid": f"uid-{name}"}}
        self.objects[(res.plural, namespace, name)] = stored
        return stored

    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any]:
        return self.objects[(res.plural, namespace, name)]

    def delete(self, res: Resource, namespace: str, name: str, **_: Any) -> None:
        self.calls.append(("delete", res.plural, name))
        self.objects.pop((res.plural, namespace, name), None)

    def merge_patch(
        self, res: Resource, namespace: str, name: str, patch: dict[str, Any], sub: str = ""
    ) -> dict[str, Any]:
        self.calls.append(("patch", f"{res.plural}/{sub}", name))
        current = self.objects.setdefault((res.plural, namespace, name), {"metadata": {}})
        current.update(patch)
        return current


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def record(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason))


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
def setup() -> tuple[CronJobController, FakeKube, FakeRecorder]:
    kube, recorder = FakeKube(), FakeRecorder()
    clock = ManualClock(NOW)
    controller = CronJobController(
        kube,  # type: ignore[arg-type]
        recorder,  # type: ignore[arg-type]
        lambda: True,
        clock=clock,
        default_zone=UTC,
    )
    return controller, kube, recorder


def test_a_due_slot_creates_the_job_and_records_it(setup: Any) -> None:
    controller, kube, recorder = setup
    controller.cronjobs.put(cronjob())
    requeue = controller.sync("ml/nightly")
    name = f"nightly-{int(datetime(2026, 1, 10, 9, 5, tzinfo=UTC).timestamp()) // 60}"
    assert kube.calls == [("create", "jobs", name), ("patch", "cronjobs/status", "nightly")]
    status = kube.objects[("cronjobs", "ml", "nightly")]["status"]
    assert [a["name"] for a in status["active"]] == [name]
    assert status["active"][0]["uid"] == f"uid-{name}"
    assert status["lastScheduleTime"] == "2026-01-10T09:05:00Z"
    assert ("Normal", "SuccessfulCreate") in recorder.events
    assert requeue is not None and 289 < requeue.total_seconds() < 291


def test_an_existing_job_of_ours_is_taken_into_active(setup: Any) -> None:
    controller, kube, _ = setup
    controller.cronjobs.put(cronjob())
    controller.sync("ml/nightly")
    job_name = next(n for (p, _, n) in kube.objects if p == "jobs")
    kube.objects.pop(("cronjobs", "ml", "nightly"))
    kube.calls.clear()
    controller.cronjobs.put(cronjob())  # the status write was lost
    controller.jobs.put({"metadata": {}})  # an unrelated object does not count
    controller.sync("ml/nightly")
    status = kube.objects[("cronjobs", "ml", "nightly")]["status"]
    assert [a["name"] for a in status["active"]] == [job_name]


def test_a_refused_create_is_an_event_and_an_error_and_the_slot_stays_due(setup: Any) -> None:
    controller, kube, recorder = setup
    kube.refuse_create = KubeError("admission webhook denied: the queue is Closed", 422)
    controller.cronjobs.put(cronjob())
    with pytest.raises(KubeError):
        controller.sync("ml/nightly")
    assert ("Warning", "FailedCreate") in recorder.events
    assert ("patch", "cronjobs/status", "nightly") not in kube.calls


def test_replace_deletes_the_active_job_first(setup: Any) -> None:
    controller, kube, recorder = setup
    ref = {"name": "nightly-old", "uid": "uid-nightly-old", "kind": "Job"}
    controller.cronjobs.put(cronjob("Replace", [ref]))
    controller.jobs.put(owned_job("nightly-old"))
    controller.sync("ml/nightly")
    assert kube.calls[0] == ("delete", "jobs", "nightly-old")
    assert kube.calls[1][0] == "create"
    assert ("Warning", "ReplaceConcurrent") in recorder.events


def test_job_events_wake_their_cronjob(setup: Any) -> None:
    controller, _, _ = setup
    controller._on_job(None, owned_job("nightly-1"))
    assert controller.queue.get(timeout=0.1) == "ml/nightly"
    controller._on_job(None, {"metadata": {"name": "other", "namespace": "ml"}})
    assert controller.queue.get(timeout=0.05) is None


def test_a_deleted_cronjob_is_left_alone(setup: Any) -> None:
    controller, kube, _ = setup
    assert controller.sync("ml/missing") is None
    assert kube.calls == []
