"""The controller survives injected API faults, SIGKILL mid-job, leader hand-over, kube-apiserver
and etcd killed and restarted under it, and watches resumed past an etcd compaction (410 Gone),
without duplicate pods, lost status, wrong final phases or a storm of requests. The test plays
kubelet (no simulator)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeio.client import EVENTS, JOBS, LEASES, PODS, Kube
from kubeio.errors import KubeError, NotFoundError
from localcluster.running import (
    LocalCluster,
    free_port,
    running_cluster,
    tools_env,
    vcjob_executable,
)
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WAIT = 120.0
LEASE_DURATION = 15.0
_names = itertools.count()


def retrying(call: Callable[[], Any], attempts: int = 50) -> Any:
    """The test's own API calls go through the same faulty server: retry them."""
    for attempt in range(attempts):
        try:
            return call()
        except NotFoundError:
            raise
        except KubeError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05)  # a pause before the next attempt, while the fault lasts
    raise AssertionError("unreachable")


def wait_for(what: str, check: Callable[[], Any], timeout: float = WAIT) -> Any:
    # The API server may be restarting under the test: an error is "not yet".
    return wait_until(what, check, timeout, interval=0.1, retry_on=(KubeError,))


class ControllerProcess:
    """`vcjob controller` as a child process with its log in a file."""

    def __init__(
        self, cluster: LocalCluster, log: Path, *, leader_elect: bool, metrics_port: int = 0
    ) -> None:
        self.metrics_port = metrics_port
        argv = [
            *vcjob_executable(), "controller",
            "--kubeconfig", str(cluster.kubeconfig),
            "--health-port", "0", "--metrics-port", str(metrics_port),
            "--bind-address", "127.0.0.1",
            "--qps", "0", "--resync-period", "2s", "--log-format", "text",
            "--request-timeout", "2s",
            "--leader-elect" if leader_elect else "--no-leader-elect",
        ]  # fmt: skip
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=tools_env(), start_new_session=True
            )

    @property
    def identity_suffix(self) -> str:
        return f"_{self.process.pid}"

    def requests_sent(self) -> int:
        """The API requests it has sent so far (`rest_client_requests_total`, every code)."""
        scrape = httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10).text
        return int(
            sum(
                float(line.rsplit(" ", 1)[1])
                for line in scrape.splitlines()
                if line.startswith("rest_client_requests_total{")
            )
        )

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def terminate(self, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


class Harness:
    def __init__(self, cluster: LocalCluster, tmp: Path) -> None:
        self.cluster = cluster
        self.kube = Kube(cluster.api_client(), qps=0, request_timeout=2.0)
        self.tmp = tmp
        self.controllers: list[ControllerProcess] = []

    def start_controller(
        self, *, leader_elect: bool = False, metrics_port: int = 0
    ) -> ControllerProcess:
        log = self.tmp / f"controller-{len(self.controllers)}.log"
        ctl = ControllerProcess(
            self.cluster, log, leader_elect=leader_elect, metrics_port=metrics_port
        )
        self.controllers.append(ctl)
        return ctl

    def stop_all(self) -> None:
        for ctl in self.controllers:
            ctl.kill()

    def logs(self) -> str:
        return "\n".join(
            f"== {c.log.name}\n{c.log.read_text(errors='replace')[-4000:]}"
            for c in self.controllers
        )

    def create_job(self, name: str, replicas: int, max_retry: int = 3) -> None:
        body = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "schedulerName": "default-scheduler",
                "queue": "default",
                "maxRetry": max_retry,
                "minAvailable": replicas,
                "tasks": [
                    {
                        "name": "worker",
                        "replicas": replicas,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "main", "image": "busybox"}],
                            }
                        },
                    }
                ],
            },
        }
        try:
            retrying(lambda: self.kube.create(JOBS, "default", body))
        except KubeError as exc:
            if exc.status != 409:
                raise

    def job(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = retrying(lambda: self.kube.get(JOBS, "default", name))
        return result

    def phase(self, name: str) -> str | None:
        return ((self.job(name).get("status") or {}).get("state") or {}).get("phase")

    def pods(self, job: str) -> dict[str, dict[str, Any]]:
        items, _ = retrying(
            lambda: self.kube.list(PODS, label_selector=f"volcano.sh/job-name={job}")
        )
        return {
            p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")
        }

    def set_phase(self, pod: str, phase: str) -> None:
        state = {"running": {}} if phase == "Running" else {"terminated": {"exitCode": 0}}
        status = {
            "phase": phase,
            "containerStatuses": [
                {"name": "main", "ready": phase == "Running", "restartCount": 0, "image": "busybox",
                 "imageID": "", "state": state}
            ],
        }  # fmt: skip
        retrying(
            lambda: self.kube.merge_patch(PODS, "default", pod, {"status": status}, sub="status")
        )

    def lease_holder(self) -> str | None:
        lease = retrying(lambda: self.kube.get_or_none(LEASES, "vcjob-system", "vcjob-controller"))
        return None if lease is None else (lease.get("spec") or {}).get("holderIdentity")

    def run_job_to_completion(self, name: str, replicas: int) -> dict[str, str]:
        """Pods Running, job Running, pods Succeeded, job Completed; returns the pods' UIDs."""
        wait_for(f"{replicas} pods of {name}", lambda: len(self.pods(name)) == replicas)
        uids = {n: p["metadata"]["uid"] for n, p in self.pods(name).items()}
        for pod in uids:
            self.set_phase(pod, "Running")
        wait_for(f"{name} Running", lambda: self.phase(name) == "Running")
        for pod in uids:
            self.set_phase(pod, "Succeeded")
        wait_for(f"{name} Completed", lambda: self.phase(name) == "Completed")
        return uids


@pytest.fixture(scope="module")
def faulty_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("faulty"), simulator=False, webhook=False, fault_rate=0.1
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def steady_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("steady"), simulator=False, webhook=False
    ) as cluster:
        yield cluster


def harness_for(cluster: LocalCluster, tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(cluster, tmp_path)
    try:
        yield harness
    finally:
        harness.stop_all()
        print(harness.logs())  # shown by pytest only when the test failed


@pytest.fixture
def faulty(faulty_cluster: LocalCluster, tmp_path: Path) -> Iterator[Harness]:
    yield from harness_for(faulty_cluster, tmp_path)


@pytest.fixture
def steady(steady_cluster: LocalCluster, tmp_path: Path) -> Iterator[Harness]:
    yield from harness_for(steady_cluster, tmp_path)


def test_injected_api_faults_lose_nothing_and_duplicate_nothing(faulty: Harness) -> None:
    faulty.start_controller()
    jobs = [f"faults{next(_names)}" for _ in range(4)]
    for name in jobs:
        faulty.create_job(name, replicas=3)
    for name in jobs:
        uids = faulty.run_job_to_completion(name, 3)
        assert {n: p["metadata"]["uid"] for n, p in faulty.pods(name).items()} == uids, (
            "no pod was created twice"
        )
        status = faulty.job(name)["status"]
        assert (status["succeeded"], status.get("retryCount", 0)) == (3, 0)


def test_a_controller_killed_mid_job_is_replaced_without_duplicates(faulty: Harness) -> None:
    first = faulty.start_controller()
    name = f"killed{next(_names)}"
    faulty.create_job(name, replicas=20)
    wait_for("the first pods", lambda: len(faulty.pods(name)) >= 1)
    first.kill()
    seen = {n: p["metadata"]["uid"] for n, p in faulty.pods(name).items()}
    faulty.start_controller()
    uids = faulty.run_job_to_completion(name, 20)
    assert {n: uids[n] for n in seen} == seen, "pods made before the kill were kept"
    assert sorted(uids) == sorted(f"{name}-worker-{i}" for i in range(20))


def test_only_the_leader_acts_and_killing_it_hands_over_within_a_lease(steady: Harness) -> None:
    a = steady.start_controller(leader_elect=True)
    b = steady.start_controller(leader_elect=True)
    holder = wait_for("a leader", steady.lease_holder)
    leader, follower = (a, b) if holder.endswith(a.identity_suffix) else (b, a)
    assert holder.endswith(leader.identity_suffix)
    name = f"leader{next(_names)}"
    steady.create_job(name, replicas=3)
    wait_for("3 pods", lambda: len(steady.pods(name)) == 3)

    def instances() -> set[str]:
        events, _ = steady.kube.list(EVENTS)
        return {
            e.get("reportingInstance") for e in events if e["involvedObject"].get("name") == name
        }

    wait_for("events of the job", instances)
    assert instances() == {holder}, "only the leader recorded events for the job"

    # The hand-over is timed by the Lease itself: the follower stamps acquireTime when it takes
    # the Lease over, so neither this test's polling nor its reads on a busy machine add to it.
    killed_at = datetime.now(UTC)
    leader.kill()
    new_holder = wait_for(
        "a new leader",
        lambda: (h := steady.lease_holder()) and h.endswith(follower.identity_suffix) and h,
        timeout=LEASE_DURATION + 30,
    )
    lease = retrying(lambda: steady.kube.get(LEASES, "vcjob-system", "vcjob-controller"))
    acquired = datetime.fromisoformat(str(lease["spec"]["acquireTime"]).replace("Z", "+00:00"))
    handover = (acquired - killed_at).total_seconds()
    assert handover <= LEASE_DURATION + 1.0, f"hand-over took {handover:.1f}s"
    assert new_holder.endswith(follower.identity_suffix)
    uids = steady.run_job_to_completion(name, 3)
    assert len(uids) == 3

    assert follower.terminate() == 0, "SIGTERM exits 0"
    assert steady.lease_holder() in (None, ""), "the Lease is released on shutdown"


def kill_and_wait_for_restart(cluster: LocalCluster, component: str) -> None:
    """SIGKILL a control-plane component; `vcjob local up` starts it again on the same ports,
    etcd on the same data, as a kubelet restarts its static pods."""
    killed = cluster.component_pids()[component]
    os.kill(killed, signal.SIGKILL)
    wait_for(
        f"{component} started again",
        lambda: cluster.component_pids().get(component) not in (None, killed),
    )


def test_kube_apiserver_and_etcd_restarting_under_the_controller_lose_and_duplicate_nothing(
    steady: Harness,
) -> None:
    controller = steady.start_controller(metrics_port=free_port())
    running = f"cp{next(_names)}"
    steady.create_job(running, replicas=3)
    wait_for("3 pods", lambda: len(steady.pods(running)) == 3)
    made = {n: p["metadata"]["uid"] for n, p in steady.pods(running).items()}
    for component in ("kube-apiserver", "etcd"):
        sent = controller.requests_sent()
        kill_and_wait_for_restart(steady.cluster, component)
        wait_for("the API server to answer again", lambda: steady.phase(running) is not None)
        # The controller's watches came back: a Job created now runs, and one made before the
        # restart is neither lost nor doubled.
        after = f"cp{next(_names)}"
        steady.create_job(after, replicas=2)
        assert len(steady.run_job_to_completion(after, 2)) == 2
        assert {n: p["metadata"]["uid"] for n, p in steady.pods(running).items()} == made
        # With no storm: each watch retries with a doubling backoff (0.2 s up to 30 s), then
        # lists and watches again. About 170 requests here for a 4 s outage and the new Job,
        # mostly the ~20 watches' attempts; 400 allows a two-minute outage on a loaded machine.
        resent = controller.requests_sent() - sent
        assert resent <= 400, f"{resent} requests after the {component} restart"
    assert steady.run_job_to_completion(running, 3) == made
    assert controller.process.poll() is None, "the controller rode through the restarts"


def compact_etcd(cluster: LocalCluster) -> int:
    """Compact etcd's history up to now (its JSON gateway), as kube-apiserver does every five
    minutes: a watch resumed from an older resourceVersion then gets 410 Gone."""
    port = cluster.state["components"]["etcd"]["port"]
    base = f"http://127.0.0.1:{port}/v3/kv"
    with httpx.Client(timeout=10) as etcd:
        revision = int(
            etcd.post(f"{base}/range", json={"key": "AA=="}).json()["header"]["revision"]
        )
        etcd.post(f"{base}/compaction", json={"revision": str(revision), "physical": True})
    return revision


def test_watches_resumed_past_a_compaction_relist_and_miss_nothing(steady: Harness) -> None:
    """The controller frozen (SIGSTOP) while Jobs come and change, etcd compacted past its
    watches' resourceVersion and kube-apiserver restarted: its watches come back with 410 Gone,
    it lists again and acts on everything that happened meanwhile, once."""
    controller = steady.start_controller()
    early = f"gone{next(_names)}"
    steady.create_job(early, replicas=2)
    wait_for("2 pods", lambda: len(steady.pods(early)) == 2)
    made = {n: p["metadata"]["uid"] for n, p in steady.pods(early).items()}
    os.kill(controller.process.pid, signal.SIGSTOP)
    try:
        meanwhile = f"gone{next(_names)}"
        steady.create_job(meanwhile, replicas=3)
        for pod in made:
            steady.set_phase(pod, "Running")
        compact_etcd(steady.cluster)
        kill_and_wait_for_restart(steady.cluster, "kube-apiserver")
        wait_for("the API server to answer again", lambda: steady.phase(early) is not None)
    finally:
        os.kill(controller.process.pid, signal.SIGCONT)
    # The Job created while it was frozen gets its pods; the one it knew goes on with its own.
    assert len(steady.run_job_to_completion(meanwhile, 3)) == 3
    wait_for(f"{early} Running", lambda: steady.phase(early) == "Running")
    assert {n: p["metadata"]["uid"] for n, p in steady.pods(early).items()} == made
    log = controller.log.read_text(errors="replace")
    assert "watch expired, relisting" in log, log[-3000:]  # kubeio.informer, on 410 Gone
    assert controller.process.poll() is None
