"""A running Job scaled to zero (`minAvailable` left out, as Go's omitempty sends a 0, task
replicas and minAvailable 0) and back, as Volcano's jobp suite does: the webhook admits both
updates, the controller removes the pods, keeps the job Running with an empty gang, and brings
the pods back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeio.client import JOBS

Kubelet = Any
pytestmark = pytest.mark.slow


def test_scale_a_running_job_to_zero_and_back(kubelet: Kubelet, job_name: str) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 2)]))
    kubelet.wait("2 pods", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.admit(job_name)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")

    down = copy.deepcopy(kubelet.job(job_name))
    del down["spec"]["minAvailable"]
    down["spec"]["tasks"][0].update(replicas=0, minAvailable=0)
    kubelet.kube.replace(JOBS, kubelet.namespace, down)
    kubelet.wait("no pods", lambda: not kubelet.pods(job_name))
    kubelet.wait(
        "an empty gang",
        lambda: ((kubelet.pod_group(job_name) or {}).get("spec") or {}).get("minMember") == 0,
    )
    kubelet.hold("Running with no pods", lambda: kubelet.phase(job_name) == "Running", job_name)

    up = copy.deepcopy(kubelet.job(job_name))
    up["spec"]["minAvailable"] = 2
    up["spec"]["tasks"][0]["replicas"] = 2
    kubelet.kube.replace(JOBS, kubelet.namespace, up)
    kubelet.wait("2 pods again", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.run_all(job_name)
    kubelet.wait(
        "a gang of 2",
        lambda: ((kubelet.pod_group(job_name) or {}).get("spec") or {}).get("minMember") == 2,
    )
    # The new pods were Pending for a moment (more than total - minAvailable): the job may have
    # passed through Pending; with both running it is Running and stays so. "Running" alone
    # may still be the status from before the scale (the controller can write the Pending
    # one after this test saw the pods); a status that counts both pods running comes after it.
    kubelet.wait(
        "Running again, both pods counted running",
        lambda: (
            (status := kubelet.job(job_name).get("status") or {}).get("running") == 2
            and (status.get("state") or {}).get("phase") == "Running"
        ),
    )
    kubelet.hold("Running", lambda: kubelet.phase(job_name) == "Running", job_name)
