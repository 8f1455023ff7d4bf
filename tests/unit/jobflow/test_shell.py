"""The JobFlow controller's writes around `jobRetainPolicy: delete`, with an in-memory API: a
Succeeded flow's Jobs are deleted only once Succeed is persisted, and a Job is never created from
a cached flow the API server has moved past. Either way round, a Succeeded flow whose Jobs were
deleted would run them all again."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.jobflow.shell import JOBFLOWS, JOBS, JobFlowController
from kubeio.client import Resource
from kubeio.clock import ManualClock
from kubeio.errors import AlreadyExistsError, NotFoundError, TransientError

NS = "ml"


class FakeKube:
    """Objects by (plural, namespace, name) with resourceVersions; `fail_status` makes the next
    status write fail with a 500 without applying it."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.fail_status = False
        self.version = 100

    def _stored(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        stored["metadata"].setdefault("uid", f"uid-{stored['metadata']['name']}")
        return stored

    def create(self, res: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        self.calls.append(("create", res.plural, name))
        if (res.plural, namespace, name) in self.objects:
            raise AlreadyExistsError(f"{name} exists", 409)
        stored = self.objects[(res.plural, namespace, name)] = self._stored(body)
        return copy.deepcopy(stored)

    def get_or_none(self, res: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.objects.get((res.plural, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def replace_status(self, res: Resource, namespace: str, body: dict[str, Any]) -> Any:
        name = body["metadata"]["name"]
        self.calls.append(("status", res.plural, name))
        if self.fail_status:
            self.fail_status = False
            raise TransientError(f"PUT {res.plural}/{name}/status: 500 injected", 500)
        if (res.plural, namespace, name) not in self.objects:
            raise NotFoundError(f"{name} not found", 404)
        stored = self.objects[(res.plural, namespace, name)] = self._stored(body)
        return copy.deepcopy(stored)

    def delete(self, res: Resource, namespace: str, name: str, **_: Any) -> None:
        self.calls.append(("delete", res.plural, name))
        self.objects.pop((res.plural, namespace, name), None)


class FakeRecorder:
    def record(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        del obj, event_type, reason, message


def controller(kube: FakeKube) -> JobFlowController:
    return JobFlowController(kube, FakeRecorder(), lambda: True, clock=ManualClock())  # type: ignore[arg-type]


def seed(kube: FakeKube, ctl: JobFlowController) -> dict[str, Any]:
    """A `delete` flow of one step whose Job has just Completed, in the API and the caches."""
    flow = kube._stored(
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "metadata": {"name": "f", "namespace": NS, "uid": "flow-uid"},
            "spec": {"jobRetainPolicy": "delete", "flows": [{"name": "a"}]},
            "status": {"state": {"phase": "Running"}},
        }
    )
    kube.objects[(JOBFLOWS.plural, NS, "f")] = flow
    ctl.flows.put(copy.deepcopy(flow))
    template = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": "a", "namespace": NS, "uid": "template-uid"},
        "spec": {"minAvailable": 1, "tasks": []},
    }
    ctl.templates.put(template)
    job = kube.create(JOBS, NS, {"metadata": {"name": "f-a", "namespace": NS}})
    job["metadata"]["ownerReferences"] = [
        {"kind": "JobFlow", "name": "f", "uid": "flow-uid", "controller": True}
    ]
    job["status"] = {"state": {"phase": "Completed"}}
    kube.objects[(JOBS.plural, NS, "f-a")] = copy.deepcopy(job)
    ctl.jobs.put(job)
    kube.calls.clear()
    return flow


def forget_jobs(kube: FakeKube, ctl: JobFlowController) -> None:
    """The Job watch has seen every deletion."""
    for job in ctl.jobs.items():
        if (JOBS.plural, NS, job["metadata"]["name"]) not in kube.objects:
            ctl.jobs.remove("Job", job)


def test_a_failed_status_write_leaves_the_jobs_of_a_succeeded_flow_in_place() -> None:
    kube = FakeKube()
    ctl = controller(kube)
    seed(kube, ctl)
    kube.fail_status = True
    with pytest.raises(TransientError):
        ctl.sync_flow(f"{NS}/f")
    assert ("delete", "jobs", "f-a") not in kube.calls
    # Tried again: Succeed is persisted, then the Job goes; it is never created again.
    ctl.sync_flow(f"{NS}/f")
    assert kube.objects[("jobflows", NS, "f")]["status"]["state"]["phase"] == "Succeed"
    assert [c for c in kube.calls if c[0] != "status"] == [("delete", "jobs", "f-a")]
    forget_jobs(kube, ctl)
    ctl.sync_flow(f"{NS}/f")
    assert [c for c in kube.calls if c[0] == "create"] == []


def test_a_stale_cached_flow_creates_no_job() -> None:
    kube = FakeKube()
    ctl = controller(kube)
    stale = seed(kube, ctl)
    ctl.sync_flow(f"{NS}/f")  # Succeed written, the Job deleted
    forget_jobs(kube, ctl)
    # The flow watch lags behind the Job watch: the cache still holds the Running flow.
    ctl.flows.put(copy.deepcopy(stale))
    ctl.sync_flow(f"{NS}/f")
    ctl.sync_flow(f"{NS}/f")
    assert [c for c in kube.calls if c[0] == "create"] == []
    assert ctl.flows.get(f"{NS}/f")["status"]["state"]["phase"] == "Succeed"  # type: ignore[index]
