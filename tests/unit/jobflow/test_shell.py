"""The JobFlow controller's writes around `jobRetainPolicy: delete`, with an in-memory API: a
Succeeded flow's Jobs are deleted only once Succeed is persisted, and a Job is never created from
a cached flow the API server has moved past. Either way round, a Succeeded flow whose Jobs were
deleted would run them all again."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.jobflow.shell.loop import JOBFLOWS, JobFlowController
from kubeio.client import JOBS
from kubeio.clock import ManualClock
from kubeio.errors import TransientError
from kubeio.events import EventRecorder
from tests.support import FakeKube

NS = "ml"


def controller(kube: FakeKube) -> JobFlowController:
    return JobFlowController(kube, EventRecorder(kube, "test"), lambda: True, clock=ManualClock())


def writes(kube: FakeKube) -> list[tuple[str, str, str]]:
    """What the controller changed, without its status writes."""
    return [c for c in kube.changes() if c[0] != "status"]


def seed(kube: FakeKube, ctl: JobFlowController) -> dict[str, Any]:
    """A `delete` flow of one step whose Job has just Completed, in the API and the caches."""
    flow = kube.put(
        JOBFLOWS,
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "metadata": {"name": "f", "namespace": NS, "uid": "flow-uid"},
            "spec": {"jobRetainPolicy": "delete", "flows": [{"name": "a"}]},
            "status": {"state": {"phase": "Running"}},
        },
    )
    ctl.flows.put(copy.deepcopy(flow))
    template = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": "a", "namespace": NS, "uid": "template-uid"},
        "spec": {"minAvailable": 1, "tasks": []},
    }
    ctl.templates.put(template)
    job = kube.put(
        JOBS,
        {
            "metadata": {
                "name": "f-a",
                "namespace": NS,
                "uid": "job-uid",
                "ownerReferences": [
                    {"kind": "JobFlow", "name": "f", "uid": "flow-uid", "controller": True}
                ],
            },
            "status": {"state": {"phase": "Completed"}},
        },
    )
    ctl.jobs.put(job)
    kube.calls.clear()
    return flow


def forget_jobs(kube: FakeKube, ctl: JobFlowController) -> None:
    """The Job watch has seen every deletion."""
    for job in ctl.jobs.items():
        if job["metadata"]["name"] not in kube.names(JOBS.plural):
            ctl.jobs.remove("Job", job)


def test_a_failed_status_write_leaves_the_jobs_of_a_succeeded_flow_in_place() -> None:
    kube = FakeKube()
    ctl = controller(kube)
    seed(kube, ctl)
    kube.failures[("status", JOBFLOWS.plural)] = [
        TransientError("PUT jobflows/f/status: 500 injected", 500)
    ]
    with pytest.raises(TransientError):
        ctl.sync_flow(f"{NS}/f")
    assert ("delete", "jobs", "f-a") not in kube.calls
    # Tried again: Succeed is persisted, then the Job goes; it is never created again.
    ctl.sync_flow(f"{NS}/f")
    assert kube.stored(JOBFLOWS, NS, "f")["status"]["state"]["phase"] == "Succeed"
    assert writes(kube) == [("delete", "jobs", "f-a")]
    forget_jobs(kube, ctl)
    ctl.sync_flow(f"{NS}/f")
    assert [c for c in kube.changes() if c[0] == "create"] == []


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
    assert [c for c in kube.changes() if c[0] == "create"] == []
    cached = ctl.flows.get(f"{NS}/f")
    assert cached is not None
    assert cached["status"]["state"]["phase"] == "Succeed"
