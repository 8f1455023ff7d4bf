"""The process runtime of the simulated kubelet: pods whose images are mapped to a command run
as real processes (see docs/local-cluster.md, "Pods that really run").

Each such pod gets a worker thread that owns its sandbox (network namespace), its volumes on
the node, its containers' processes (each in its own mount namespace, output captured to a log
file per run), its probes, restarts and graceful termination, and writes the pod's status.

It stays one module: most of it is `PodWorker`, the life of one pod from sandbox to teardown,
whose steps share that pod's state under one thread; the sandbox, probes, volumes and image
mappings are in modules of their own already.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import yaml

from localcluster.simulator import kubelet, podenv, podstatus, probes, volumes
from localcluster.simulator.client import PODS, ApiError, KubeClient
from localcluster.simulator.images import (
    ImageMapping,
    container_argv,
    mapping_for,
    pod_runs_for_real,
)
from localcluster.simulator.kubelet import timestamp
from localcluster.simulator.kubeletpods import ContainerEntry, PodEntry
from localcluster.simulator.sandbox import Forwarder, Sandbox, dies_with_node
from shared.wire import deletion_timestamp, spec_of

log = logging.getLogger(__name__)

WORKER_TICK = 0.2
VOLUME_REFRESH = 2.0
TOKEN_REFRESH_SHARE = 0.8
DEFAULT_GRACE_SECONDS = 30
CRASH_RETRY_SECONDS = 5.0
ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"


def pod_key(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    metadata = pod.get("metadata") or {}
    return (
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
        str(metadata.get("uid", "")),
    )


def pod_dir_name(namespace: str, name: str, uid: str) -> str:
    """`NAMESPACE_NAME_UID`, as kubelet names a pod's log folder (the API server reads it)."""
    return f"{namespace}_{name}_{uid}"


def runtime_available() -> str | None:
    """Why real processes cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "namespaces need root (unshare)"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@dataclass
class ContainerRun:
    spec: Mapping[str, Any]
    init: bool = False
    process: subprocess.Popen[bytes] | None = None
    log_file: TextIO | None = None
    started_at: str = ""
    started_mono: float = 0.0
    restart_count: int = 0
    last_terminated: dict[str, Any] = field(default_factory=dict)
    terminated: dict[str, Any] | None = None
    waiting: tuple[str, str] = ("ContainerCreating", "")
    restart_due: float = 0.0
    ready: bool = False
    started: bool = False
    probes: dict[str, probes.ProbeTracker] = field(default_factory=dict)
    kill_deadline: float | None = None
    backing_off: bool = False

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def view(self, uid: str) -> podstatus.ContainerView:
        last = {"terminated": self.last_terminated} if self.last_terminated else {}
        if self.running():
            state: dict[str, Any] = {"running": {"startedAt": self.started_at}}
        elif self.backing_off and self.terminated is not None:
            reason, message = self.waiting
            state = {"waiting": {"reason": reason, "message": message}}
            last = {"terminated": self.terminated}
        elif self.terminated is not None:
            state = {"terminated": self.terminated}
        else:
            reason, message = self.waiting
            state = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
        digest = hashlib.sha256(f"{uid}/{self.name}/{self.restart_count}".encode()).hexdigest()
        return podstatus.ContainerView(
            name=self.name,
            image=str(self.spec.get("image", "")),
            state=state,
            last_state=last,
            ready=self.ready and self.running(),
            started=self.started and self.running(),
            restart_count=self.restart_count,
            container_id=f"vcjob://{digest}" if self.process is not None else "",
        )


def _runs_own_command(pid: int) -> bool:
    """The container's process has left the node's steps that set it up (nsenter, unshare,
    launch.py, whose command lines all carry the launch module) for its own command."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return bool(cmdline) and b"localcluster.simulator.launch" not in cmdline


class PodWorker:
    """One pod's life on the node, on its own thread."""

    def __init__(self, runtime: ProcessRuntime, pod: Mapping[str, Any], host_ip: str) -> None:
        namespace, name, uid = pod_key(pod)
        self.thread = threading.Thread(target=self.run, name=f"pod-{namespace}/{name}", daemon=True)
        self.runtime = runtime
        self.pod: Mapping[str, Any] = pod
        self.host_ip = host_ip
        self.namespace, self.pod_name, self.uid = namespace, name, uid
        self.dir = runtime.pods_dir / pod_dir_name(namespace, name, uid)
        self.pod_ip = ""  # the sandbox's, once it runs
        self.gone = threading.Event()
        self.sandbox: Sandbox | None = None
        spec = pod.get("spec") or {}
        self.inits = [ContainerRun(c, init=True) for c in spec.get("initContainers") or []]
        self.containers = [ContainerRun(c) for c in spec.get("containers") or []]
        self.start_time = timestamp(dt.datetime.now(dt.UTC))
        self._volumes_at = 0.0
        self._volumes_ready = False
        self._tokens: dict[tuple[str, int], tuple[str, float, float]] = {}
        self._last_status: dict[str, Any] | None = None
        self._publish_retry_at = 0.0
        self._publish_retry_delay: float | None = None
        self._terminating_since: float | None = None

    # -- loop ---------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._setup()
            while not self.gone.is_set() and not self.runtime.stop.is_set():
                if deletion_timestamp(self.pod):
                    if self._terminate():
                        break
                else:
                    self._step()
                self._publish()
                self.gone.wait(WORKER_TICK)
        except Exception:
            log.exception("pod worker crashed", extra={"pod": f"{self.namespace}/{self.pod_name}"})
            crashed = True
        else:
            crashed = False
        finally:
            self._kill_all(signal.SIGKILL)
            if self.sandbox is not None:
                self.sandbox.stop()
        if crashed:
            # The next kubelet round starts the pod again; not at once, as kubelet backs off.
            self.gone.wait(CRASH_RETRY_SECONDS)
        self.runtime.forget(self.uid, removed=not crashed)

    def _setup(self) -> None:
        (self.dir / "volumes").mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        self.sandbox = Sandbox(self.runtime.forwarder, self.dir, self.uid, {self.runtime.api_port})
        self.pod_ip = self.sandbox.start()
        log.info(
            "pod sandbox ready",
            extra={"pod": f"{self.namespace}/{self.pod_name}", "ip": self.pod_ip},
        )

    # -- volumes ------------------------------------------------------------------------------

    def _volume_specs(self) -> list[Mapping[str, Any]]:
        spec = self.pod.get("spec") or {}
        specs = list(spec.get("volumes") or [])
        if self._automount():
            specs.append(volumes.service_account_volume(self.namespace))
        return specs

    def _automount(self) -> bool:
        spec = self.pod.get("spec") or {}
        if spec.get("automountServiceAccountToken") is False:
            return False
        mounts = [m for c in spec.get("containers") or [] for m in c.get("volumeMounts") or []]
        return not any(m.get("mountPath") == volumes.SERVICE_ACCOUNT_DIR for m in mounts)

    def _refresh_volumes(self) -> bool:
        now = time.monotonic()
        if self._volumes_ready and now - self._volumes_at < VOLUME_REFRESH:
            return True
        self._volumes_at = now
        try:
            for volume in self._volume_specs():
                directory = self.dir / "volumes" / str(volume.get("name"))
                files = volumes.volume_files(
                    self.pod, volume, self.runtime.config_map, self.runtime.secret, self._token
                )
                if files is None:
                    directory.mkdir(parents=True, exist_ok=True)
                    directory.chmod(0o777)
                elif volumes.write_atomically(directory, files) and self._volumes_ready:
                    log.info(
                        "volume updated",
                        extra={
                            "pod": f"{self.namespace}/{self.pod_name}",
                            "volume": volume.get("name"),
                        },
                    )
        except (volumes.VolumeError, ApiError) as err:
            for run in self.containers:
                if run.process is None:
                    run.waiting = ("ContainerCreating", f"MountVolume.SetUp failed: {err}")
            return self._volumes_ready
        self._volumes_ready = True
        return True

    def _token(self, audience: str, seconds: int) -> str:
        key = (audience, seconds)
        cached = self._tokens.get(key)
        now = time.monotonic()
        if cached is not None and now < cached[2]:
            return cached[0]
        account = str(spec_of(self.pod).get("serviceAccountName") or "default")
        spec: dict[str, Any] = {
            "expirationSeconds": seconds,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": self.pod_name,
                "uid": self.uid,
            },
        }
        if audience:
            spec["audiences"] = [audience]
        answer = self.runtime.client.request(
            "POST",
            f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{account}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        token = str(answer["status"]["token"])
        self._tokens[key] = (token, now, now + seconds * TOKEN_REFRESH_SHARE)
        return token

    # -- containers ---------------------------------------------------------------------------

    def _mounts(self, container: Mapping[str, Any]) -> list[str]:
        flags = []
        for mount in container.get("volumeMounts") or []:
            source = self.dir / "volumes" / str(mount.get("name"))
            if mount.get("subPath"):
                source = source / str(mount["subPath"])
            suffix = ":ro" if mount.get("readOnly") else ""
            flags += ["--mount", f"{source}={mount.get('mountPath')}{suffix}"]
        if self._automount():
            source = self.dir / "volumes" / "kube-api-access"
            flags += ["--mount", f"{source}={volumes.SERVICE_ACCOUNT_DIR}:ro"]
        return flags

    def _start(self, run: ContainerRun) -> None:
        mapping = mapping_for(str(run.spec.get("image", "")), self.runtime.mappings)
        if mapping is None or self.sandbox is None:
            return
        base = {
            "PATH": os.pathsep.join(
                [str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")]
            ),
            "HOSTNAME": self.pod_name,
            **podenv.service_environment("127.0.0.1", self.runtime.api_port),
        }
        try:
            env = podenv.container_environment(
                self.pod, run.spec, self.runtime.config_map_data, self.runtime.secret_data, base
            )
        except (podenv.ContainerConfigError, ApiError) as err:
            run.waiting = ("CreateContainerConfigError", str(err))
            return
        argv = [podenv.expand(a, env) for a in container_argv(run.spec, mapping)]
        logs = self.dir / "logs" / run.name
        logs.mkdir(parents=True, exist_ok=True)
        output = (logs / f"{run.restart_count}.log").open("a", encoding="utf-8")
        workdir = str(run.spec.get("workingDir") or "")
        command = [
            "nsenter", f"--net={self.sandbox.netns}", "--",
            "unshare", "--mount", "--uts", "--propagation", "private", "--",
            sys.executable, "-m", "localcluster.simulator.launch",
            "--hostname", self.pod_name[:63],
            *self._mounts(run.spec),
            *(["--workdir", workdir] if workdir else []),
            "--", *argv,
        ]  # fmt: skip
        run.process = subprocess.Popen(
            dies_with_node(command),
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        run.log_file = output
        run.started_at = timestamp(dt.datetime.now(dt.UTC))
        run.started_mono = time.monotonic()
        run.terminated = None
        run.ready = False
        run.kill_deadline = None
        run.probes = {
            kind: probes.ProbeTracker(run.spec[kind], run.started_mono)
            for kind in ("startupProbe", "livenessProbe", "readinessProbe")
            if run.spec.get(kind)
        }
        run.started = "startupProbe" not in run.probes
        log.info(
            "container started",
            extra={
                "pod": f"{self.namespace}/{self.pod_name}",
                "container": run.name,
                "pid": run.process.pid,
            },
        )

    def _reap(self, run: ContainerRun) -> bool:
        """Record the exit of a container that ended; True when it did."""
        if run.process is None or run.process.poll() is None:
            return False
        code = int(run.process.returncode)
        if code < 0:
            code = 128 - code  # killed by signal N: 128+N, as runtimes report
        run.terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": run.started_at,
            "finishedAt": timestamp(dt.datetime.now(dt.UTC)),
        }
        if run.log_file is not None:
            run.log_file.close()
            run.log_file = None
        run.process = None
        run.ready = False
        run.started = False
        log.info(
            "container exited",
            extra={
                "pod": f"{self.namespace}/{self.pod_name}",
                "container": run.name,
                "exit_code": code,
            },
        )
        policy = str(spec_of(self.pod).get("restartPolicy") or "Always")
        if run.init:
            policy = "Never" if policy == "Never" else "OnFailure"
        if podstatus.should_restart(policy, code):
            run.restart_due = time.monotonic() + podstatus.restart_delay(run.restart_count)
        else:
            run.restart_due = float("inf")
        return True

    def _restart_if_due(self, run: ContainerRun) -> None:
        if run.terminated is None or run.restart_due == float("inf"):
            return
        now = time.monotonic()
        if now < run.restart_due:
            run.backing_off = True
            delay = podstatus.restart_delay(run.restart_count)
            run.waiting = (
                "CrashLoopBackOff",
                f"back-off {int(delay)}s restarting failed container={run.name} "
                f"pod={self.pod_name}_{self.namespace}({self.uid})",
            )
            return
        run.last_terminated = run.terminated
        run.terminated = None
        run.backing_off = False
        run.restart_count += 1
        self._start(run)

    def _probe(self, run: ContainerRun) -> None:
        if not run.running() or run.kill_deadline is not None:
            return
        now = time.monotonic()
        specs = [c.spec for c in self.containers]
        prefix = (
            [
                "nsenter",
                f"--net={self.sandbox.netns}",
                f"--mount=/proc/{run.process.pid}/ns/mnt",
                # The container's own root (see launch.py) and working dir.
                f"--root=/proc/{run.process.pid}/root",
                f"--wd=/proc/{run.process.pid}/cwd",
                "--",
            ]
            if self.sandbox and run.process
            else []
        )
        if not run.probes:
            run.ready = True
            return
        for kind, tracker in run.probes.items():
            if kind != "startupProbe" and not run.started:
                continue
            if kind == "startupProbe" and run.started:
                continue
            if not tracker.due(now):
                continue
            verdict = tracker.record(
                probes.run_probe(tracker.spec, self.pod_ip, specs, prefix), time.monotonic()
            )
            if kind == "startupProbe" and verdict is True:
                run.started = True
            elif kind == "readinessProbe" and verdict is not None:
                run.ready = verdict
            elif kind in ("livenessProbe", "startupProbe") and verdict is False:
                log.info(
                    "container failed its probe, restarting it",
                    extra={
                        "pod": f"{self.namespace}/{self.pod_name}",
                        "container": run.name,
                        "probe": kind,
                    },
                )
                self._signal(run, signal.SIGTERM)
                grace = tracker.spec.get("terminationGracePeriodSeconds")
                run.kill_deadline = now + float(grace if grace is not None else self._grace())
        if "readinessProbe" not in run.probes:
            run.ready = run.started

    def _step(self) -> None:
        if not self._refresh_volumes():
            return
        for run in self.inits:
            if (
                run.terminated is not None
                and run.terminated.get("exitCode") == 0
                and run.restart_due == float("inf")
            ):
                continue
            if run.process is None and run.terminated is None:
                self._start(run)
            self._reap(run)
            self._restart_if_due(run)
            return  # init containers run one at a time, each to success
        for run in self.containers:
            if (
                run.process is None
                and run.terminated is None
                and run.restart_count == 0
                and not run.started_at
            ):
                self._start(run)
            self._reap(run)
            self._restart_if_due(run)
            self._probe(run)
            if run.kill_deadline is not None and time.monotonic() > run.kill_deadline:
                self._signal(run, signal.SIGKILL)

    def _initialized(self) -> bool:
        return all(
            r.terminated is not None and r.terminated.get("exitCode") == 0 for r in self.inits
        )

    # -- termination --------------------------------------------------------------------------

    def _grace(self) -> float:
        metadata = self.pod.get("metadata") or {}
        seconds = metadata.get("deletionGracePeriodSeconds")
        if seconds is None:
            seconds = spec_of(self.pod).get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        return float(max(int(seconds or 0), 0))

    def _signal(self, run: ContainerRun, signum: int) -> None:
        if run.process is not None and run.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.process.pid, signum)

    def _kill_all(self, signum: int) -> None:
        for run in [*self.inits, *self.containers]:
            self._signal(run, signum)
            if signum == signal.SIGKILL and run.process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    run.process.wait(5)
                self._reap(run)

    def _terminate(self) -> bool:
        """SIGTERM, then SIGKILL after the grace period; True once the pod is removed."""
        now = time.monotonic()
        if self._terminating_since is None:
            self._terminating_since = now
            log.info(
                "stopping pod",
                extra={"pod": f"{self.namespace}/{self.pod_name}", "grace": self._grace()},
            )
            for run in [*self.inits, *self.containers]:
                self._signal(run, signal.SIGTERM)
                run.restart_due = float("inf")
        for run in [*self.inits, *self.containers]:
            if self._reap(run):
                run.restart_due = float("inf")
        alive = [r for r in [*self.inits, *self.containers] if r.running()]
        if alive and now - self._terminating_since < self._grace():
            return False
        self._kill_all(signal.SIGKILL)
        self._publish()
        try:
            self.runtime.client.delete(
                PODS, self.pod_name, self.namespace, grace_period_seconds=0, uid=self.uid
            )
        except ApiError as err:
            if not err.not_found:
                log.warning("pod removal failed", extra={"pod": self.pod_name, "error": str(err)})
                return False
        log.info("pod deleted", extra={"namespace": self.namespace, "pod": self.pod_name})
        return True

    # -- what the kubelet API reads --------------------------------------------------------------

    def entry(self) -> PodEntry:
        """The pod as the kubelet API sees it now (read from another thread: a snapshot)."""
        containers = tuple(
            ContainerEntry(
                name=run.name,
                restart_count=run.restart_count,
                pid=pid,
                started=pid is not None and _runs_own_command(pid),
            )
            for run in [*self.inits, *self.containers]
            for pid in [run.process.pid if run.process is not None and run.running() else None]
        )
        sandbox = self.sandbox
        alive = sandbox is not None and sandbox.agent is not None and sandbox.agent.poll() is None
        return PodEntry(
            namespace=self.namespace,
            name=self.pod_name,
            uid=self.uid,
            node_name=str(spec_of(self.pod).get("nodeName") or ""),
            runs_for_real=True,
            folder=self.dir,
            containers=containers,
            netns=sandbox.netns if sandbox is not None and alive else None,
        )

    # -- status -------------------------------------------------------------------------------

    def _publish(self) -> None:
        status = podstatus.pod_status(
            self.pod,
            host_ip=self.host_ip,
            pod_ip=self.pod_ip,
            start_time=self.start_time,
            init_views=[r.view(self.uid) for r in self.inits],
            views=[r.view(self.uid) for r in self.containers],
            initialized=self._initialized(),
            previous=self.pod.get("status") or {},
            at=timestamp(dt.datetime.now(dt.UTC)),
        )
        if status == self._last_status or time.monotonic() < self._publish_retry_at:
            return
        try:
            self.runtime.client.patch(
                PODS, self.pod_name, {"status": status}, self.namespace, subresource="status"
            )
        except ApiError as err:
            self._publish_retry_delay = kubelet.status_retry_delay(self._publish_retry_delay)
            self._publish_retry_at = time.monotonic() + self._publish_retry_delay
            log.warning(
                "pod status update failed",
                extra={
                    "pod": self.pod_name,
                    "error": str(err),
                    "retry_in_seconds": self._publish_retry_delay,
                },
            )
            return
        self._publish_retry_delay = None
        self._last_status = status


class ProcessRuntime:
    """Runs the pods whose every image is mapped; the simulator calls `sync` for each bound pod."""

    def __init__(
        self,
        client: KubeClient,
        kubeconfig: Path,
        pods_dir: Path,
        mappings: list[ImageMapping],
        stop: threading.Event,
    ) -> None:
        self.client = client
        self.pods_dir = pods_dir
        self.mappings = mappings
        self.stop = stop
        document = yaml.safe_load(kubeconfig.read_text())
        cluster = document["clusters"][0]["cluster"]
        self.api_port = urlsplit(cluster["server"]).port or 443
        self.ca_pem = base64.b64decode(cluster.get("certificate-authority-data", "")).decode()
        self.forwarder = Forwarder()
        self._workers: dict[str, PodWorker] = {}
        # Pods this node has stopped and removed; the informer may still show them a moment.
        self._removed: set[str] = set()
        self._lock = threading.Lock()
        pods_dir.mkdir(parents=True, exist_ok=True)

    def handles(self, pod: Mapping[str, Any]) -> bool:
        return pod_runs_for_real(pod, self.mappings)

    def sync(self, pod: Mapping[str, Any], host_ip: str) -> None:
        uid = pod_key(pod)[2]
        with self._lock:
            worker = self._workers.get(uid)
            if worker is None and uid in self._removed:
                return
            if worker is None:
                worker = PodWorker(self, pod, host_ip)
                self._workers[uid] = worker
                worker.thread.start()
            else:
                worker.pod = pod

    def retain(self, live: set[str]) -> None:
        """Stop the workers of pods that are gone."""
        with self._lock:
            for uid, worker in list(self._workers.items()):
                if uid not in live:
                    worker.gone.set()
            self._removed &= live

    def forget(self, uid: str, removed: bool = False) -> None:
        with self._lock:
            self._workers.pop(uid, None)
            if removed:
                self._removed.add(uid)

    def shutdown(self, timeout: float = 5.0) -> None:
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            worker.gone.set()
        for worker in workers:
            worker.thread.join(timeout)
        self.forwarder.shutdown()

    def find_pod(self, namespace: str, name: str) -> PodEntry | None:
        """The pod of that name this node runs, for the kubelet API (a pod being replaced under
        the same name: the one not terminating)."""
        with self._lock:
            workers = [
                w
                for w in self._workers.values()
                if w.namespace == namespace and w.pod_name == name and not w.gone.is_set()
            ]
        workers.sort(key=lambda w: bool(deletion_timestamp(w.pod)))
        return workers[0].entry() if workers else None

    # -- lookups ------------------------------------------------------------------------------

    def _get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.client.request("GET", f"/api/v1/namespaces/{namespace}/{plural}/{name}")
        except ApiError as err:
            if err.not_found:
                return None
            raise

    def config_map(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        found = self._get("configmaps", namespace, name)
        if found is None and name == ROOT_CA_CONFIG_MAP:
            # What kube-controller-manager's root CA publisher puts in every namespace.
            return {"data": {"ca.crt": self.ca_pem}}
        return found

    def secret(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._get("secrets", namespace, name)

    def config_map_data(self, namespace: str, name: str) -> Mapping[str, str] | None:
        found = self.config_map(namespace, name)
        return None if found is None else {k: str(v) for k, v in (found.get("data") or {}).items()}

    def secret_data(self, namespace: str, name: str) -> Mapping[str, str] | None:
        found = self.secret(namespace, name)
        return None if found is None else podenv.secret_data(found)
