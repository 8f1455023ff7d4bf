"""`kubectl patch` of a Job's replicas raises one Normal `JobUpdated` Event on the Job; the
controller's own writes (status, PodGroup, pods) never do."""

from __future__ import annotations

from typing import Any

import pytest

from kubeio.client import EVENTS

Kubelet = Any
pytestmark = pytest.mark.slow


def job_updated(kubelet: Kubelet, job: str) -> list[dict[str, Any]]:
    items, _ = kubelet.kube.list(EVENTS)
    return [
        e
        for e in items
        if e.get("reason") == "JobUpdated"
        and (e.get("involvedObject") or {}).get("kind") == "Job"
        and (e.get("involvedObject") or {}).get("name") == job
    ]


def test_a_manual_scale_raises_one_normal_job_updated_event(
    kubelet: Kubelet, job_name: str
) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 2)], minAvailable=1))
    kubelet.wait("2 pods", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    # Status writes, the PodGroup and pod updates, resyncs: none of them is a spec change.
    kubelet.hold(
        "no JobUpdated before a scale", lambda: not job_updated(kubelet, job_name), job_name
    )

    task = kubelet.job(job_name)["spec"]["tasks"][0]
    kubelet.patch_job(job_name, {"spec": {"tasks": [{**task, "replicas": 3, "minAvailable": 1}]}})
    (event,) = kubelet.wait("a JobUpdated Event", lambda: job_updated(kubelet, job_name))
    assert event["type"] == "Normal"
    assert event["message"] == "the job was scaled: task worker replicas 2 -> 3"
    assert event["involvedObject"]["uid"] == kubelet.job(job_name)["metadata"]["uid"]

    kubelet.wait("3 pods", lambda: len(kubelet.pods(job_name)) == 3)
    kubelet.run_all(job_name)
    # The controller's own writes after the scale raise nothing more.
    kubelet.hold(
        "one JobUpdated, counted once",
        lambda: (
            [(e["message"], e.get("count", 1)) for e in job_updated(kubelet, job_name)]
            == [("the job was scaled: task worker replicas 2 -> 3", 1)]
        ),
        job_name,
        seconds=3.0,
    )
