"""The fault suite: a seeded batch of jobs of mixed shapes and lifecycle policies runs on the
local control plane with `--fault-rate 0.05` and the simulator (scripted failing pods), while
the controller is killed with SIGKILL and restarted several times.

Every job must reach the phase its spec implies, with retryCount equal to the runs of its
failing pod; no two live pods may ever share a job/task/index (checked on every ADDED of a pod
watch), and no job may be left unfinished. The summary is printed (docs/operations.md quotes it).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.job.decide import podview
from kubeio.client import JOBS, PODS, Kube
from kubeio.errors import KubeError
from localcluster.running import LocalCluster, running_cluster
from shared import labels
from tests.e2e.controller.faultsuite_support import FaultyController, PodWatch, retrying
from tests.support.polling import wait_for, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = 20260101
JOBS_IN_BATCH = 40
FAULT_RATE = 0.05
KILLS_AT = (12.0, 30.0, 50.0)  # seconds after the batch was submitted
DEADLINE = 170.0  # for the whole batch, on a busy two-core machine
RESTART_POLICIES = ("RestartJob", "RestartTask", "RestartPod")
SHAPES = (*RESTART_POLICIES, "AbortJob", "TerminateJob", "none")


@dataclass(frozen=True)
class JobShape:
    name: str
    policy: str
    workers: int
    max_retry: int

    @property
    def fails(self) -> bool:
        return self.policy != "none"

    def expected(self) -> tuple[str, int]:
        """(final phase, retryCount). The failing pod fails on every run: a restart policy
        restarts it until maxRetry restarts were counted, then the job fails."""
        if self.policy in RESTART_POLICIES:
            return "Failed", self.max_retry
        return {"AbortJob": "Aborted", "TerminateJob": "Terminated"}.get(
            self.policy, "Completed"
        ), 0

    def expected_failing_runs(self) -> int:
        return self.max_retry if self.policy in RESTART_POLICIES else (1 if self.fails else 0)

    def body(self) -> dict[str, Any]:
        def task(name: str, replicas: int, annotations: dict[str, str]) -> dict[str, Any]:
            return {
                "name": name,
                "replicas": replicas,
                "minAvailable": replicas,
                "template": {
                    "metadata": {"annotations": annotations},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox"}],
                    },
                },
            }

        tasks = [task("w", self.workers, {labels.SIM_RUNTIME_KEY: "6s" if self.fails else "2s"})]
        if self.fails:
            tasks.append(task("f", 1, {labels.SIM_FAIL_AFTER_KEY: "1s"}))
        return {
            "apiVersion": labels.BATCH_API_VERSION,
            "kind": "Job",
            "metadata": {"name": self.name, "namespace": "default"},
            "spec": {
                "schedulerName": "volcano",
                "queue": "default",
                "maxRetry": self.max_retry,
                "minAvailable": sum(t["replicas"] for t in tasks),
                "policies": ([{"event": "PodFailed", "action": self.policy}] if self.fails else []),
                "tasks": tasks,
            },
        }


def batch(seed: int = SEED, size: int = JOBS_IN_BATCH) -> list[JobShape]:
    rng = random.Random(seed)
    shapes = [SHAPES[i % len(SHAPES)] for i in range(size)]
    rng.shuffle(shapes)
    return [
        JobShape(f"fs{i:02d}-{shape.lower()}", shape, rng.randint(1, 3), rng.randint(1, 2))
        for i, shape in enumerate(shapes)
    ]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("faultsuite"),
        simulator=True,
        webhook=False,
        controller=False,
        nodes=4,
        fault_rate=FAULT_RATE,
        extra_args=("--fault-seed", str(SEED)),
    ) as running:
        yield running


def job_results(kube: Kube) -> dict[str, tuple[str, int]]:
    """Each job's (phase, retryCount)."""
    items, _ = retrying(lambda: kube.list(JOBS))
    return {
        j["metadata"]["name"]: (
            str(((j.get("status") or {}).get("state") or {}).get("phase") or ""),
            int((j.get("status") or {}).get("retryCount") or 0),
        )
        for j in items
    }


def test_fault_suite(cluster: LocalCluster, tmp_path: Path) -> None:
    kube = Kube(cluster.api_client(), qps=0, request_timeout=5.0)
    shapes = batch()
    watch = PodWatch(kube)
    watcher = threading.Thread(target=watch.run, name="pod-watch", daemon=True)
    watcher.start()
    log = tmp_path / "controller.log"
    controller = FaultyController(cluster, log)
    started = time.monotonic()
    kills = 0
    try:
        for shape in shapes:
            try:
                retrying(lambda s=shape: kube.create(JOBS, "default", s.body()))
            except KubeError as exc:
                if exc.status != 409:  # created by an earlier attempt whose answer was lost
                    raise
        pending_kills = list(KILLS_AT)

        def unfinished() -> dict[str, tuple[str, int]]:
            """The jobs not yet in the phase they must end in, once the kill that is due is done."""
            nonlocal controller, kills
            if pending_kills and time.monotonic() - started >= pending_kills[0]:
                pending_kills.pop(0)
                controller.kill()
                kills += 1
                controller = FaultyController(cluster, log)
            found = job_results(kube)
            return {
                s.name: found.get(s.name, ("", 0))
                for s in shapes
                if found.get(s.name, ("", 0))[0] != s.expected()[0]
            }

        try:
            wait_for(
                unfinished,
                lambda left: not left and not pending_kills,
                f"every job in its final phase after {len(KILLS_AT)} controller kills",
                DEADLINE - (time.monotonic() - started),
                interval=1.0,
            )
        except AssertionError as stuck:
            raise AssertionError(f"{stuck}\n{log.read_text(errors='replace')[-3000:]}") from None
        results = job_results(kube)
        # The watch has caught up: every pod the API holds now was seen created.
        pods, _ = retrying(lambda: kube.list(PODS, label_selector=labels.JOB_NAME_KEY))
        wait_until(
            "the pod watch to see every pod",
            lambda: {podview.uid_of(p) for p in pods} <= watch.seen(),
            30,
        )
    finally:
        controller.kill()
        watch.stop.set()
    wall = time.monotonic() - started
    wrong = {
        s.name: {"expected": s.expected(), "got": results.get(s.name)}
        for s in shapes
        if results.get(s.name) != s.expected()
    }
    runs = {
        s.name: (len(watch.created.get((s.name, "f"), set())), s.expected_failing_runs())
        for s in shapes
        if s.fails
    }
    bad_runs = {name: r for name, r in runs.items() if r[0] != r[1]}
    text = log.read_text(errors="replace")
    faults_seen = sum(
        text.count(marker) for marker in ("injected fault", "409 Conflict", "504 Timeout")
    )
    summary = {
        "jobs": len(shapes),
        "shapes": {shape: sum(s.policy == shape for s in shapes) for shape in SHAPES},
        "fault_rate": FAULT_RATE,
        "faults_seen_by_controller": faults_seen,
        "controller_kills": kills,
        "pods_created": sum(len(u) for u in watch.created.values()),
        "duplicates": len(watch.duplicates),
        "stuck": len(wrong),
        "wall_seconds": round(wall, 1),
    }
    print("fault suite summary:", json.dumps(summary, sort_keys=True))
    assert kills >= 3
    assert watch.duplicates == [], f"two live pods shared a job/task/index: {watch.duplicates}"
    assert wrong == {}, f"jobs stuck or in the wrong phase/retryCount: {wrong}\n{text[-3000:]}"
    assert bad_runs == {}, f"failing pod runs (seen, expected) differ: {bad_runs}"
