"""A watch on the Job sees every phase it passes through, in order (as `kubectl get vcjob -w`
and `kubectl wait --for=jsonpath=…` would): each is written by its own status write."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubeio.client import COMMANDS, JOBS, Kube
from kubeio.errors import KubeError
from tests.support import wait_for

Kubelet = Any
WAIT = 30.0
pytestmark = pytest.mark.slow


class PhaseWatch:
    """The phases one Job's watch events carry, consecutive repeats folded."""

    def __init__(self, kube: Kube, name: str) -> None:
        self.kube = kube
        self.name = name
        self.phases: list[str] = []
        self.stop = threading.Event()
        _, self.rv = kube.list(JOBS)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                for event in self.kube.watch(JOBS, resource_version=self.rv, timeout_seconds=5):
                    obj = event.get("object") or {}
                    meta = obj.get("metadata") or {}
                    self.rv = str(meta.get("resourceVersion") or self.rv)
                    if meta.get("name") != self.name:
                        continue
                    phase = ((obj.get("status") or {}).get("state") or {}).get("phase")
                    if phase and (not self.phases or self.phases[-1] != phase):
                        self.phases.append(phase)
                    if self.stop.is_set():
                        return
            except KubeError:
                continue

    def close(self) -> list[str]:
        self.stop.set()
        self.thread.join(10)
        return self.phases


@pytest.fixture
def watch(kubelet: Kubelet, job_name: str) -> Iterator[Callable[[], list[str]]]:
    w = PhaseWatch(kubelet.kube, job_name)
    yield lambda: list(w.phases)
    w.close()


def command(kubelet: Kubelet, job: str, action: str) -> None:
    uid = kubelet.job(job)["metadata"]["uid"]
    kubelet.kube.create(
        COMMANDS,
        kubelet.namespace,
        {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"name": f"{job}-{action.lower()}"},
            "action": action,
            "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job,
                       "uid": uid},
        },
    )  # fmt: skip


def start(kubelet: Kubelet, job: str, replicas: int, **kw: Any) -> None:
    kubelet.create_job(kubelet.make_job(job, [("worker", replicas)], **kw))
    kubelet.wait("the pods", lambda: len(kubelet.pods(job)) == replicas)
    kubelet.run_all(job)
    kubelet.wait("Running", lambda: kubelet.phase(job) == "Running")


def seen(watch: Callable[[], list[str]], kubelet: Kubelet, expected: list[str]) -> None:
    """The watch carried exactly `expected`: wait until it carried as many phases, then compare
    (a phase written over before the watch saw it would leave the sequence short and time out)."""
    phases = wait_for(watch, lambda p: len(p) >= len(expected), f"the phases {expected}", WAIT)
    assert phases == expected


def test_restart_job_writes_restarting_then_pending(
    kubelet: Kubelet, job_name: str, watch: Callable[[], list[str]]
) -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    start(kubelet, job_name, 2, policies=policies)
    kubelet.set_phase(f"{job_name}-worker-0", "Failed", exit_code=1)
    kubelet.wait("new pods", lambda: kubelet.phase(job_name) == "Pending")
    kubelet.wait("both pods again", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.run_all(job_name)
    kubelet.wait("Running again", lambda: kubelet.phase(job_name) == "Running")
    kubelet.run_all(job_name, "Succeeded")
    seen(
        watch,
        kubelet,
        ["Pending", "Running", "Restarting", "Pending", "Running", "Completing", "Completed"],
    )


def test_the_last_retry_writes_restarting_before_failed(
    kubelet: Kubelet, job_name: str, watch: Callable[[], list[str]]
) -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    start(kubelet, job_name, 1, policies=policies, max_retry=1)
    kubelet.set_phase(f"{job_name}-worker-0", "Failed", exit_code=1)
    seen(watch, kubelet, ["Pending", "Running", "Restarting", "Failed"])
    assert kubelet.job(job_name)["status"]["retryCount"] == 1


def test_abort_then_resume_writes_every_phase(
    kubelet: Kubelet, job_name: str, watch: Callable[[], list[str]]
) -> None:
    start(kubelet, job_name, 2)
    command(kubelet, job_name, "AbortJob")
    kubelet.wait("Aborted", lambda: kubelet.phase(job_name) == "Aborted")
    command(kubelet, job_name, "ResumeJob")
    seen(watch, kubelet, ["Pending", "Running", "Aborting", "Aborted", "Restarting", "Pending"])


def test_terminate_writes_terminating_then_terminated(
    kubelet: Kubelet, job_name: str, watch: Callable[[], list[str]]
) -> None:
    start(kubelet, job_name, 2)
    command(kubelet, job_name, "TerminateJob")
    seen(watch, kubelet, ["Pending", "Running", "Terminating", "Terminated"])


def test_completion_writes_completing_then_completed(
    kubelet: Kubelet, job_name: str, watch: Callable[[], list[str]]
) -> None:
    start(kubelet, job_name, 2)
    kubelet.run_all(job_name, "Succeeded")
    seen(watch, kubelet, ["Pending", "Running", "Completing", "Completed"])
