"""What the fault suites share: the controller run through the fault proxy, the suite's own calls
retried through it, a pod watch that catches two live pods in one slot, a watch that records every
object ever ADDED, and the count of the faults the proxy injected."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.job.decide import podview
from kubeio.client import PODS, Kube, Resource
from kubeio.errors import KubeError, TransientError
from localcluster.clusterdir import COMPONENTS_KUBECONFIG_FILE, LOG_DIR
from localcluster.running import LocalCluster, tools_env, vcjob_executable
from shared import labels


def retrying(call: Any, attempts: int = 100) -> Any:
    """The suite's own calls go through the same faulty API server."""
    for attempt in range(attempts):
        try:
            return call()
        except KubeError as exc:
            if exc.status == 404 or attempt == attempts - 1:
                raise
            time.sleep(0.1)  # a pause before the next attempt: the fault was injected at random
    raise AssertionError("unreachable")


@dataclass
class PodWatch:
    """Every pod ADDED, from a watch that resumes at its last resourceVersion (a re-list
    after a 410 reports the pods it had not seen as ADDED too)."""

    kube: Kube
    live: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # uid -> key
    created: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (job, task) -> uids
    duplicates: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _added(self, pod: dict[str, Any]) -> None:
        uid = podview.uid_of(pod)
        job = podview.labels_of(pod).get(labels.JOB_NAME_KEY)
        task, index = podview.task_of(pod), podview.index_of(pod)
        if not uid or job is None or task is None or index is None or uid in self.live:
            return
        key = (job, task, index)
        with self._lock:
            if key in self.live.values():
                self.duplicates.append(f"{job}/{task}/{index}")
            self.live[uid] = key
            self.created.setdefault((job, task), set()).add(uid)

    def seen(self) -> set[str]:
        """The uids of every pod seen created."""
        with self._lock:
            return set().union(*self.created.values())

    def _deleted(self, pod: dict[str, Any]) -> None:
        with self._lock:
            self.live.pop(podview.uid_of(pod), None)

    def _relist(self) -> str:
        items, rv = retrying(lambda: self.kube.list(PODS, label_selector=labels.JOB_NAME_KEY))
        uids = {podview.uid_of(p) for p in items}
        with self._lock:
            for uid in [u for u in self.live if u not in uids]:
                self.live.pop(uid)
        for pod in items:
            self._added(pod)
        return str(rv)

    def run(self) -> None:
        rv = self._relist()
        while not self.stop.is_set():
            # A watch that fails is started again after a short pause (the sleeps below).
            try:
                for event in self.kube.watch(
                    PODS,
                    resource_version=rv,
                    label_selector=labels.JOB_NAME_KEY,
                    timeout_seconds=30,
                ):
                    obj = event.get("object") or {}
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if event.get("type") == "ADDED":
                        self._added(obj)
                    elif event.get("type") == "DELETED":
                        self._deleted(obj)
                    if self.stop.is_set():
                        return
            except TransientError as exc:
                if exc.reason == "Expired" or exc.status == 410:
                    rv = self._relist()
                time.sleep(0.05)
            except KubeError:
                time.sleep(0.05)
            except Exception:  # a cut stream: resume from the last resourceVersion
                time.sleep(0.05)


class FaultyController:
    """`vcjob controller` reaching kube-apiserver through the cluster's fault proxy (the
    components' kubeconfig), so that its requests meet the injected faults."""

    def __init__(self, cluster: LocalCluster, log: Path) -> None:
        kubeconfig = cluster.dir / COMPONENTS_KUBECONFIG_FILE
        assert kubeconfig.exists(), f"{kubeconfig} is missing: the cluster runs no fault proxy"
        argv = [
            *vcjob_executable(), "controller",
            "--kubeconfig", str(kubeconfig),
            "--health-port", "0", "--metrics-port", "0", "--bind-address", "127.0.0.1",
            "--qps", "0", "--resync-period", "5s", "--log-format", "text",
            "--request-timeout", "2s", "--no-leader-elect",
        ]  # fmt: skip
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=tools_env(), start_new_session=True
            )

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@dataclass
class Killer:
    """SIGKILLs the controller at the given seconds after `start()` and starts a new one each
    time, on a thread of its own so that the suite's polls go on meanwhile."""

    cluster: LocalCluster
    log: Path
    kills_at: tuple[float, ...]
    kills: int = 0
    controller: FaultyController | None = None
    done: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self.controller = FaultyController(self.cluster, self.log)
        self._thread = threading.Thread(target=self._run, name="controller-killer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        started = time.monotonic()
        for at in self.kills_at:
            if self._stop.wait(max(0.0, started + at - time.monotonic())):
                return
            assert self.controller is not None
            self.controller.kill()
            self.kills += 1
            self.controller = FaultyController(self.cluster, self.log)
        self.done.set()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(15)
        if self.controller is not None:
            self.controller.kill()


@dataclass
class AddedWatch:
    """The uids of every object of `resource` in `namespace` ever ADDED, by name, from a watch
    that resumes at its last resourceVersion (a re-list after a 410 counts the objects it had
    not seen as ADDED too, and one added and deleted in between is never seen)."""

    kube: Kube
    resource: Resource
    namespace: str
    uids: dict[str, list[str]] = field(default_factory=dict)
    relists: int = 0  # after the first: each may hide an object added and deleted meanwhile
    stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def _meta(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        meta = obj.get("metadata") or {}
        if meta.get("namespace") != self.namespace or not meta.get("uid"):
            return None
        return dict(meta)

    def _added(self, obj: dict[str, Any]) -> None:
        meta = self._meta(obj)
        if meta is None:
            return
        name, uid = str(meta["name"]), str(meta["uid"])
        with self._lock:
            seen = self.uids.setdefault(name, [])
            if uid not in seen:
                seen.append(uid)

    def _relist(self) -> str:
        self.relists += 1
        items, rv = retrying(lambda: self.kube.list(self.resource))
        for obj in items:
            self._added(obj)
        return str(rv)

    def _run(self) -> None:
        rv = self._relist()
        while not self.stop.is_set():
            # A watch that fails is started again after a short pause (the sleeps below).
            try:
                for event in self.kube.watch(
                    self.resource, resource_version=rv, timeout_seconds=30
                ):
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        # 410: the resourceVersion left the watch cache; anything else: re-watch.
                        if obj.get("code") == 410:
                            rv = self._relist()
                        break
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if event.get("type") == "ADDED":
                        self._added(obj)
                    if self.stop.is_set():
                        return
            except TransientError as exc:
                if exc.reason == "Expired" or exc.status == 410:
                    rv = self._relist()
                time.sleep(0.05)
            except KubeError:
                time.sleep(0.05)
            except Exception:  # a cut stream: resume from the last resourceVersion
                time.sleep(0.05)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"watch-{self.resource.plural}", daemon=True
        )
        self._thread.start()

    def snapshot(self) -> dict[str, list[str]]:
        with self._lock:
            return {name: list(uids) for name, uids in self.uids.items()}


def faults_injected(cluster: LocalCluster) -> int:
    """How many faults the proxy injected (its log has one line per fault); only vcjob's own
    processes go through it, here the controller alone."""
    path = cluster.dir / LOG_DIR / "fault-proxy.log"
    if not path.exists():
        return 0
    return path.read_text(errors="replace").count("fault injected")
