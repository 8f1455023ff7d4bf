"""Shared pieces of the controller benchmarks: a controller subprocess with its metrics."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubeio.client import Kube
from localcluster.testing import LocalCluster, running_cluster, tools_env, vcjob_executable

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


def job_body(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "default-scheduler",
            "queue": "default",
            "minAvailable": 1,
            "maxRetry": 3,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "minAvailable": 1,
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


def pod_body(name: str) -> dict[str, Any]:
    """A pod shaped like the controller's (labels, annotations, one container)."""
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
            "schedulerName": "default-scheduler",
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class ControllerProcess:
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
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

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
