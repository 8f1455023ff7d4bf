"""Shared pieces of the controller benchmarks: a controller subprocess with its metrics, and the
pure parts of `bench/controller.py` (profiles' flags, run order, summaries)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import yaml

from kubeio.client import PODS, Kube, Resource
from kubeio.errors import AlreadyExistsError, NotFoundError
from localcluster.running import LocalCluster, running_cluster, tools_env, vcjob_executable

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)

CLK_TCK = 100.0


@contextlib.contextmanager
def bare_cluster() -> Iterator[tuple[LocalCluster, Path, Kube]]:
    """A local API server alone (no simulator, webhook or controller), a scratch folder, and an
    unthrottled client of it."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_cluster(
            Path(tmp) / "cluster", simulator=False, webhook=False, controller=False
        ) as cluster,
    ):
        yield cluster, Path(tmp), Kube(cluster.api_client(), qps=0)


@contextlib.contextmanager
def control_plane(nodes: int, webhook: bool) -> Iterator[tuple[LocalCluster, Path, Kube]]:
    """The real control plane with `nodes` simulated nodes whose pods run for an hour once bound
    (0: no node agent, pods stay unscheduled) and, with `webhook`, vcjob's webhook registered;
    no controller. A scratch folder and an unthrottled client come with it."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_cluster(
            Path(tmp) / "cluster",
            simulator=nodes > 0,
            nodes=max(nodes, 1),
            pod_runtime="1h",
            webhook=webhook,
            controller=False,
        ) as cluster,
    ):
        yield cluster, Path(tmp), Kube(cluster.api_client(), qps=0)


def ensure_namespace(kube: Kube, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    with contextlib.suppress(AlreadyExistsError):
        kube.create(NAMESPACES, None, body)


def delete_namespace(kube: Kube, name: str, timeout: float = 600.0) -> None:
    """Delete a namespace and wait until it is gone, so that the next contender's API server and
    nodes are as idle as the first one's."""
    with contextlib.suppress(NotFoundError):
        kube.delete(NAMESPACES, None, name)
    deadline = time.monotonic() + timeout
    while kube.get_or_none(NAMESPACES, None, name) is not None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"namespace {name} still exists after {timeout:.0f}s")
        time.sleep(0.5)


class PodArrivals:
    """Watches one namespace's pods and notes when each new one is seen: every contender (the
    plain loop, vcjob's controller, Volcano's) is timed the same way, from the first pod to the
    last, by the API server's watch rather than by what the contender says of itself."""

    def __init__(self, kube: Kube, namespace: str, expected: int) -> None:
        self.expected = expected
        self.times: list[float] = []
        self._seen: set[str] = set()
        self._done = threading.Event()
        self._response: Any = None
        _, version = kube.list(Resource("", "v1", "pods", "Pod", namespaced=True), limit=1)
        self._thread = threading.Thread(
            target=self._watch, args=(kube, namespace, version), daemon=True
        )
        self._thread.start()

    def _watch(self, kube: Kube, namespace: str, version: str) -> None:
        path = PODS.path(namespace)
        while not self._done.is_set():
            for event in kube.watch_path(
                path, resource_version=version, on_open=self._opened, timeout_seconds=600
            ):
                obj = event.get("object") or {}
                meta = obj.get("metadata") or {}
                version = str(meta.get("resourceVersion") or version)
                if event.get("type") == "ADDED" and meta.get("name") not in self._seen:
                    self._seen.add(str(meta.get("name")))
                    self.times.append(time.monotonic())
                    if len(self.times) >= self.expected:
                        self._done.set()
                        return

    def _opened(self, response: Any) -> None:
        self._response = response

    def wait(self, timeout: float) -> float:
        """Seconds from the first pod seen to the last expected one."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"{len(self.times)} of {self.expected} pods after {timeout:.0f}s")
        return self.times[-1] - self.times[0]

    def first(self) -> float:
        return self.times[0]


def apiserver_metrics(cluster: LocalCluster) -> str:
    """kube-apiserver's own /metrics (the local cluster's admin may read them)."""
    api = cluster.api_client()
    config = api.configuration
    headers = {a["key"]: a["value"] for a in config.auth_settings().values() if a["in"] == "header"}
    response: Any = api.call_api("GET", f"{config.host}/metrics", header_params=headers)
    response.read()
    return str(response.data.decode())


DEFAULT_SCHEDULER: Final = "default-scheduler"
# The node agent's gang scheduler answers to Volcano's name, so both controllers gate on it.
GANG_SCHEDULER: Final = "volcano"
PodPath = Literal["gang", "default"]


def scheduler_of(path: PodPath) -> str:
    return GANG_SCHEDULER if path == "gang" else DEFAULT_SCHEDULER


def job_body(name: str, replicas: int, *, gang: bool = False) -> dict[str, Any]:
    """A Job of one task. `gang`: Volcano's path (scheduler `volcano`, the whole task as the
    gang's minimum, pods created once the PodGroup is admitted); else kube-scheduler's, with a
    gang of one, so pods are created at once."""
    minimum = replicas if gang else 1
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": GANG_SCHEDULER if gang else DEFAULT_SCHEDULER,
            "queue": "default",
            "minAvailable": minimum,
            "maxRetry": 3,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "minAvailable": minimum,
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


def pod_body(name: str, scheduler: str = DEFAULT_SCHEDULER) -> dict[str, Any]:
    """A pod shaped like the controller's (labels, annotations, one container). It names no
    PodGroup: the node agent places a `volcano` pod without one by itself, as a bare pod."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"volcano.sh/job-name": "plain", "volcano.sh/task-spec": "worker"},
            "annotations": {"volcano.sh/job-version": "0", "volcano.sh/task-spec": "worker"},
        },
        "spec": {
            "restartPolicy": "Never",
            "schedulerName": scheduler,
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_mb(pid: int, field: str) -> float:
    """A memory figure of /proc/PID/status (VmRSS: now, VmHWM: the peak) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


VOLCANO_GATES = "--controllers=*,-colocation-config-controller,-sharding-controller"


class VolcanoControllerProcess:
    """Volcano's own vc-controller-manager binary on the same control plane (admin kubeconfig,
    no leader election), with `extra` flags (a settings profile's, then the user's)."""

    def __init__(self, binary: str, cluster: LocalCluster, log: Path, extra: Sequence[str]) -> None:
        # The local cluster serves no ColocationConfiguration: Volcano's controller would wait
        # for that informer forever and never start, unless its controller is left out.
        gates = [] if any(a.startswith("--controllers") for a in extra) else [VOLCANO_GATES]
        argv = [
            binary, "--kubeconfig", str(cluster.kubeconfig), "--leader-elect=false",
            *gates, *extra,
        ]  # fmt: skip
        with log.open("wb") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        self.log = log

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def peak_rss_mb(self) -> float:
        return status_mb(self.process.pid, "VmHWM")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


class ControllerProcess:
    """`vcjob controller` on the cluster, unthrottled (`--qps 0`) unless `extra` says otherwise
    (click keeps an option's last value)."""

    def __init__(self, cluster: LocalCluster, log: Path, *extra: str) -> None:
        argv = [
            *vcjob_executable(), "controller",
            "--kubeconfig", str(cluster.kubeconfig),
            "--no-leader-elect", "--health-port", "0", "--metrics-port", "0",
            "--bind-address", "127.0.0.1", "--qps", "0", "--log-format", "text",
            "--log-level", "warning", *extra,
        ]  # fmt: skip
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=tools_env()
            )
        self.health_port, self.metrics_port = self._wait_ports()

    def _wait_ports(self) -> tuple[int, int]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            match = re.search(r"health port (\d+) metrics port (\d+)", text)
            if match:
                return int(match.group(1)), int(match.group(2))
            if self.process.poll() is not None:
                raise RuntimeError(f"controller exited:\n{self.log.read_text()}")
            time.sleep(0.1)
        raise RuntimeError("controller did not report its metrics port")

    def metrics(self) -> str:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10
        ) as r:
            return str(r.read().decode())

    def metric(self, name: str) -> float:
        # Only this metric: the whole exposition, 50 times a second, would cost the measured
        # controller about a tenth of its CPU.
        url = f"http://127.0.0.1:{self.metrics_port}/metrics?name[]={name}"
        with urllib.request.urlopen(url, timeout=10) as r:
            text = str(r.read().decode())
        for line in text.splitlines():
            if line.startswith((name + " ", name + "{")):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                url = f"http://127.0.0.1:{self.health_port}/readyz"
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise TimeoutError("the controller did not become ready")

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def rss_mb(self) -> float:
        return status_mb(self.process.pid, "VmRSS")

    def peak_rss_mb(self) -> float:
        return status_mb(self.process.pid, "VmHWM")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def wait_metric(ctl: ControllerProcess, name: str, target: float, timeout: float) -> float:
    """Seconds until the metric reaches `target` (polled every 20 ms)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if ctl.metric(name) >= target:
            return time.monotonic() - start
        time.sleep(0.02)
    raise TimeoutError(f"{name} did not reach {target} within {timeout}s ({ctl.metric(name)})")


def requests_by_method(metrics_text: str) -> dict[str, float]:
    """`rest_client_requests_total` summed per HTTP method."""
    totals: dict[str, float] = {}
    for line in metrics_text.splitlines():
        if line.startswith("rest_client_requests_total{"):
            method = re.search(r'method="([^"]+)"', line)
            if method:
                value = float(line.rsplit(" ", 1)[1])
                totals[method.group(1)] = totals.get(method.group(1), 0.0) + value
    return totals


def job_reconciles(metrics_text: str) -> float:
    """The Job controller's reconciles (`controller_runtime_reconcile_total`, every result)."""
    total = 0.0
    for line in metrics_text.splitlines():
        if line.startswith("controller_runtime_reconcile_total{") and 'controller="job"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _buckets_by_bound(metrics_text: str, name: str) -> dict[str, float]:
    """A histogram's cumulative counts per `le`, summed over its other labels."""
    counts: dict[str, float] = {}
    for line in metrics_text.splitlines():
        if line.startswith(f"{name}_bucket"):
            le = re.search(r'le="([^"]+)"', line)
            if le:
                counts[le.group(1)] = counts.get(le.group(1), 0.0) + float(line.rsplit(" ", 1)[1])
    return counts


def histogram_delta(before: str, after: str, name: str) -> str:
    """The observations of `name` made between two scrapes, as bucket lines of their own
    (label sets merged), for `histogram_quantile`."""
    old = _buckets_by_bound(before, name)
    return "\n".join(
        f'{name}_bucket{{le="{le}"}} {count - old.get(le, 0.0)}'
        for le, count in _buckets_by_bound(after, name).items()
    )


def machine_line() -> str:
    """CPUs and memory of this machine, for the figures' record."""
    memory_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    return f"{os.cpu_count()} CPUs, {memory_kb / 1024 / 1024:.0f} GB"


def histogram_quantile(metrics_text: str, name: str, q: float) -> float:
    """Prometheus-style quantile from cumulative `_bucket` lines (linear within a bucket)."""
    buckets: list[tuple[float, float]] = []
    for line in metrics_text.splitlines():
        if line.startswith(f"{name}_bucket"):
            le = re.search(r'le="([^"]+)"', line)
            if le:
                buckets.append((float(le.group(1)), float(line.rsplit(" ", 1)[1])))
    buckets.sort()
    if not buckets or buckets[-1][1] == 0:
        return float("nan")
    total = buckets[-1][1]
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            share = (rank - lower_count) / max(count - lower_count, 1e-9)
            return lower_bound + (bound - lower_bound) * share
        lower_bound, lower_count = bound, count
    return lower_bound


_SERVER_REQUESTS = "apiserver_request_total"
_SERVER_DURATION_SUM = "apiserver_request_duration_seconds_sum"


def _per_kind(metrics_text: str, name: str) -> dict[str, float]:
    """A kube-apiserver counter summed per `VERB resource[/subresource]` (scopes merged, codes
    too but for conflicts, counted apart); WATCH requests are left out (their duration is the
    watch's life)."""
    totals: dict[str, float] = {}
    prefix = name + "{"
    for line in metrics_text.splitlines():
        if not line.startswith(prefix):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        verb = labels.get("verb", "")
        if verb in ("WATCH", "CONNECT"):
            continue
        kind = labels.get("resource", "")
        if labels.get("subresource"):
            kind += "/" + labels["subresource"]
        key = f"{verb} {kind}"
        if labels.get("code") == "409":
            key += " (409 Conflict)"
        totals[key] = totals.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return totals


@dataclass(frozen=True)
class ServerRequests:
    """What kube-apiserver served between two scrapes, per `VERB resource`: how many requests
    and the seconds they took together (every client's: the controller's, kube-scheduler's,
    kube-controller-manager's and the node agent's)."""

    count: dict[str, float]
    seconds: dict[str, float]

    @staticmethod
    def between(before: str, after: str) -> ServerRequests:
        def delta(name: str) -> dict[str, float]:
            old = _per_kind(before, name)
            return {
                k: v - old.get(k, 0.0)
                for k, v in _per_kind(after, name).items()
                if v - old.get(k, 0.0) > 0
            }

        return ServerRequests(delta(_SERVER_REQUESTS), delta(_SERVER_DURATION_SUM))

    def lines(self, per: float, unit: str) -> list[str]:
        """`VERB resource: N per unit, M ms per unit` for each kind, the most requests first."""
        return [
            f"{kind}: {n / per:.2f} per {unit}, {1000 * self.seconds.get(kind, 0.0) / per:.2f} ms "
            f"per {unit}"
            for kind, n in sorted(self.count.items(), key=lambda kv: -kv[1])
        ]


class Profiler:
    """py-spy (from PATH) sampling a process when `output` is set, writing collapsed stacks
    (`--format raw`) to `output` when stopped."""

    def __init__(self, pid: int, output: Path | None) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        if output is not None:
            # --gil: only the thread holding the GIL, i.e. where the process's Python CPU goes.
            argv = ["py-spy", "record", "--pid", str(pid), "--rate", "200", "--format", "raw"]
            argv += ["--gil", "--output", str(output), "--nonblocking"]
            self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(60)


# --- Pure parts of bench/controller.py: settings profiles, run order, summaries. ---

Profile = Literal["production", "unthrottled"]
PROFILES: Final[tuple[Profile, ...]] = ("production", "unthrottled")
# Volcano's client when unthrottled: far above what two cores can ask of kube-apiserver.
VOLCANO_UNTHROTTLED_QPS: Final = 10000
# What a pod takes of a simulated node's `pods` capacity (localcluster.simulator.nodes.MAX_PODS).
NODE_POD_SLOTS: Final = 110


@dataclass(frozen=True)
class ChartSettings:
    """The controller's client and concurrency settings in the Helm chart's default values."""

    workers: int
    qps: float
    burst: int


def chart_settings(values: Mapping[str, Any]) -> ChartSettings:
    """`controller.workers`, `.qps` and `.burst` of the chart's values.yaml, as loaded."""
    controller = values["controller"]
    return ChartSettings(
        int(controller["workers"]), float(controller["qps"]), int(controller["burst"])
    )


def read_chart_settings(values_yaml: Path) -> ChartSettings:
    return chart_settings(yaml.safe_load(values_yaml.read_text()))


def profiles_of(choice: str) -> tuple[Profile, ...]:
    """`--settings production|unthrottled|both` as the profiles to run, in that order."""
    return PROFILES if choice == "both" else tuple(p for p in PROFILES if p == choice)


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def vcjob_flags(profile: Profile, chart: ChartSettings) -> list[str]:
    """`vcjob controller` flags of a profile: the chart's defaults as a Helm install passes them,
    or the same workers with no client-side rate limit (`--qps 0`)."""
    workers = ["--workers", str(chart.workers)]
    if profile == "production":
        return [*workers, "--qps", _number(chart.qps), "--burst", str(chart.burst)]
    return [*workers, "--qps", "0"]


def volcano_flags(profile: Profile, workers: int) -> list[str]:
    """vc-controller-manager flags of a profile: its own defaults (client 50 qps, burst 100)
    but for the job workers, set to vcjob's so that both reconcile as many Jobs at once; or
    the same workers with a client limit it never reaches."""
    threads = ["--worker-threads", str(workers)]
    if profile == "production":
        return threads
    limit = str(VOLCANO_UNTHROTTLED_QPS)
    return [*threads, "--kube-api-qps", limit, "--kube-api-burst", limit]


T = TypeVar("T")


def abba(contenders: Sequence[T], round_index: int) -> list[T]:
    """The contenders' order in one round: as given in even rounds, reversed in odd ones
    (A B, B A, A B …), so that a drift of the machine's load over the rounds hits each alike."""
    return list(contenders) if round_index % 2 == 0 else list(reversed(contenders))


@dataclass(frozen=True)
class Spread:
    """The median and range of one figure over the runs."""

    median: float
    low: float
    high: float

    def render(self, digits: int = 2) -> str:
        if self.low == self.high:
            return f"{self.median:.{digits}f}"
        return f"{self.median:.{digits}f} ({self.low:.{digits}f}-{self.high:.{digits}f})"


def spread(values: Sequence[float]) -> Spread | None:
    """None when no run gave the figure."""
    if not values:
        return None
    return Spread(statistics.median(values), min(values), max(values))


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Round by round ratios of two contenders' figures (runs of the same round paired)."""
    return [a / b for a, b in zip(numerators, denominators, strict=True) if b > 0]


def revision_label(short_hash: str, dirty: bool) -> str:
    return f"{short_hash}+dirty" if dirty else short_hash


def git_revision(root: Path) -> str:
    """The checkout's short commit, `+dirty` when tracked files differ from it ("unknown"
    outside a git checkout)."""
    try:
        short = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return revision_label(short, bool(status.strip()))


def gang_capacity_problem(path: PodPath, nodes: int, total_pods: int) -> str | None:
    """Why the gang path cannot run with these nodes, or None: gangs are admitted only while
    the nodes have room for them, and every pod runs for the whole run."""
    if path != "gang":
        return None
    if nodes < 1:
        return "the gang path needs the node agent (--nodes 1 or more) to admit PodGroups"
    if total_pods > nodes * NODE_POD_SLOTS:
        return (
            f"{total_pods} pods do not fit on {nodes} nodes of {NODE_POD_SLOTS} pods: "
            "later gangs would never be admitted (raise --nodes)"
        )
    return None
