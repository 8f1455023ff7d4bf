"""The controller in-process against the local control plane, with the test playing kubelet and
gang scheduler (no simulator): pod phases and PodGroup admission are patched by hand."""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.job.shell.runner import Controller
from controller.settings import Settings
from kubeio.client import JOBS, PODGROUPS, PODS, Kube
from localcluster.running import LocalCluster, running_cluster, tools_env, vcjob_executable
from tests.support.polling import wait_until

WAIT = 60.0
_names = itertools.count()


# One cluster and one controller for the whole folder: every test's Job has a name of its own.
@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("cluster"), simulator=False, webhook=True, controller=False
    ) as running:
        yield running


@pytest.fixture(scope="package")
def controller(cluster: LocalCluster) -> Iterator[Controller]:
    settings = Settings(
        kubeconfig=str(cluster.kubeconfig),
        leader_elect=False,
        health_port=0,
        metrics_port=0,
        bind_address="127.0.0.1",
        resync_period=2.0,
        qps=0,
    )
    ctl = Controller(settings, cluster.api_client())
    ReconcileLog.attach(ctl)
    ctl.start()
    assert ctl.wait_synced(WAIT), ctl.readyz()
    yield ctl
    ctl.shutdown()


class ReconcileLog:
    """How many reconciles of each key the in-process controller has finished: what a test that
    asserts that nothing happens waits for, instead of a window of time."""

    def __init__(self, ctl: Controller) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._process = ctl.process

    @classmethod
    def attach(cls, ctl: Controller) -> ReconcileLog:
        log = cls(ctl)
        ctl.process = log.process  # type: ignore[method-assign]
        ctl.reconcile_log = log  # type: ignore[attr-defined]
        return log

    def process(self, key: str) -> None:
        try:
            self._process(key)
        finally:
            with self._lock:
                self._counts[key] += 1

    def count(self, key: str) -> int:
        with self._lock:
            return self._counts[key]


class Kubelet:
    """Plays kubelet and gang scheduler for the tests, through the API."""

    def __init__(self, cluster: LocalCluster, controller: Controller) -> None:
        self.cluster = cluster
        self.controller = controller
        self.kube = Kube(cluster.api_client(), qps=0)
        self.namespace = "default"

    # --- objects ---------------------------------------------------------------------------

    def job(self, name: str) -> dict[str, Any]:
        return self.kube.get(JOBS, self.namespace, name)

    def phase(self, name: str) -> str | None:
        job = self.kube.get_or_none(JOBS, self.namespace, name)
        return (((job or {}).get("status") or {}).get("state") or {}).get("phase")

    def pods(self, job: str) -> dict[str, dict[str, Any]]:
        items, _ = self.kube.list(PODS, label_selector=f"volcano.sh/job-name={job}")
        return {
            p["metadata"]["name"]: p
            for p in items
            if p["metadata"]["namespace"] == self.namespace
            and not p["metadata"].get("deletionTimestamp")
        }

    def create_job(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.kube.create(JOBS, self.namespace, body)

    def patch_job(self, name: str, patch: dict[str, Any]) -> None:
        self.kube.merge_patch(JOBS, self.namespace, name, patch)

    # --- kubelet ---------------------------------------------------------------------------

    def set_phase(self, pod: str, phase: str, exit_code: int | None = None) -> None:
        status: dict[str, Any] = {"phase": phase}
        if phase == "Running":
            status["containerStatuses"] = [
                {"name": "main", "ready": True, "restartCount": 0, "image": "busybox",
                 "imageID": "", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
            ]  # fmt: skip
        elif phase in ("Succeeded", "Failed"):
            code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
            reason = "Completed" if code == 0 else "Error"
            terminated = {"exitCode": code, "reason": reason}
            status["containerStatuses"] = [
                {"name": "main", "ready": False, "restartCount": 0, "image": "busybox",
                 "imageID": "", "state": {"terminated": terminated}}
            ]  # fmt: skip
        self.kube.merge_patch(PODS, self.namespace, pod, {"status": status}, sub="status")

    def run_all(self, job: str, phase: str = "Running") -> None:
        for name in self.pods(job):
            self.set_phase(name, phase)

    def pod_group(self, job: str) -> dict[str, Any] | None:
        items, _ = self.kube.list(PODGROUPS)
        for group in items:
            owners = group["metadata"].get("ownerReferences") or []
            if any(o.get("name") == job for o in owners):
                return group
        return None

    def admit(self, job: str) -> None:
        """Gang scheduler: mark the job's PodGroup Inqueue, on the main resource as Volcano's
        scheduler writes it (the PodGroup CRD has no status subresource)."""
        items, _ = self.kube.list(PODGROUPS)
        for group in items:
            owners = group["metadata"].get("ownerReferences") or []
            if any(o.get("name") == job for o in owners):
                self.kube.merge_patch(
                    PODGROUPS, self.namespace, group["metadata"]["name"],
                    {"status": {"phase": "Inqueue"}},
                )  # fmt: skip

    wait = staticmethod(lambda what, check, timeout=WAIT: wait_for(what, check, timeout))

    def hold(self, what: str, check: Callable[[], bool], job: str, seconds: float = 2.0) -> None:
        still(what, check, self.controller, f"{self.namespace}/{job}", seconds)

    make_job = staticmethod(lambda *a, **k: make_job(*a, **k))

    def vcjob(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*vcjob_executable(), *args, "--kubeconfig", str(self.cluster.kubeconfig)],
            capture_output=True, text=True, timeout=60, env=tools_env(), check=True,
        )  # fmt: skip


def wait_for(what: str, check: Callable[[], Any], timeout: float = WAIT) -> Any:
    return wait_until(what, check, timeout, interval=0.1)


def still(what: str, check: Callable[[], bool], ctl: Controller, key: str, seconds: float) -> None:
    """Assert `check` holds, read every 0.1 s, until the controller has reconciled `key` after
    this call (asked for here: a settled job's resync may be skipped) and for `seconds` at
    least, which leaves the writes that reconcile made (its Events are sent asynchronously)
    time to show."""
    log: ReconcileLog = ctl.reconcile_log  # type: ignore[attr-defined]
    since = time.monotonic()

    def reconciled_after(start: int) -> Callable[[], bool]:
        def done() -> bool:
            assert check(), what
            return log.count(key) > start and time.monotonic() - since >= seconds

        return done

    # A reconcile already under way when the key is added finishes first, then the key is
    # processed again; asking twice makes sure one reconcile began after this call.
    for _ in range(2):
        start = log.count(key)
        ctl.queue.add(key)
        wait_until(f"{key} reconciled while {what}", reconciled_after(start), WAIT, interval=0.1)


@pytest.fixture
def kubelet(cluster: LocalCluster, controller: Controller) -> Kubelet:
    return Kubelet(cluster, controller)


@pytest.fixture
def job_name() -> str:
    return f"job{next(_names)}"


def make_job(
    name: str,
    tasks: list[tuple[str, int]],
    *,
    scheduler: str = "default-scheduler",
    max_retry: int = 3,
    policies: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "queue": "default",
            "maxRetry": max_retry,
            "minAvailable": sum(r for _, r in tasks),
            "tasks": [
                {
                    "name": task,
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "busybox"}],
                        }
                    },
                }
                for task, replicas in tasks
            ],
            **spec,
        },
    }
    if policies:
        body["spec"]["policies"] = policies
    return body
