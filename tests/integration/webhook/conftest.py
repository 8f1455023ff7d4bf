"""A real `vcjob webhook` process over TLS on free ports, with certificates from `vcjob certs`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from localcluster.running import LocalCluster, running_cluster

VCJOB = str(Path(sys.executable).with_name("vcjob"))
START_TIMEOUT = 60.0


def issue_certs(out_dir: Path) -> Path:
    subprocess.run(
        [VCJOB, "certs", "--out-dir", str(out_dir), "--host", "127.0.0.1", "--host", "localhost"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return out_dir


@dataclass
class WebhookProcess:
    proc: subprocess.Popen[str]
    ports: dict[str, int]
    cert_dir: Path
    logs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ports['webhook']}"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['health']}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['metrics']}"

    @property
    def ca(self) -> str:
        return str(self.cert_dir / "ca.crt")

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)


def _pump(proc: subprocess.Popen[str], logs: list[dict[str, Any]], ready: threading.Event) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = {"msg": line.rstrip()}
        logs.append(entry)
        if entry.get("msg") == "webhook serving":
            ready.set()


def launch(certs: Path, *extra: str) -> WebhookProcess:
    args = [
        VCJOB, "webhook", "--host", "127.0.0.1", "--port", "0", "--health-port", "0",
        "--metrics-port", "0", "--tls-cert-file", str(certs / "tls.crt"),
        "--tls-private-key-file", str(certs / "tls.key"), "--queue-check", "off",
        "--cert-reload-interval", "0.2", "--shutdown-delay", "0.2", *extra,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("VCJOB_WEBHOOK_")}
    proc = subprocess.Popen(
        args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    )
    logs: list[dict[str, Any]] = []
    ready = threading.Event()
    threading.Thread(target=_pump, args=(proc, logs, ready), daemon=True).start()
    webhook = WebhookProcess(proc, {}, certs, logs)
    deadline = time.monotonic() + START_TIMEOUT
    while not ready.wait(0.05):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(webhook)
            raise AssertionError(f"the webhook did not start: {logs}")
    serving = next(e for e in logs if e.get("msg") == "webhook serving")
    webhook.ports = {k: int(serving[k]) for k in ("webhook", "health", "metrics")}
    return webhook


def stop(webhook: WebhookProcess) -> None:
    webhook.terminate()
    try:
        webhook.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        webhook.proc.kill()
        webhook.proc.wait(timeout=5)
    if webhook.proc.stderr is not None:
        webhook.proc.stderr.close()


@pytest.fixture
def start_webhook(tmp_path: Path) -> Iterator[Callable[..., WebhookProcess]]:
    """Start a webhook of one's own (certificates from `vcjob certs` unless given)."""
    started: list[WebhookProcess] = []

    def start(*extra: str, cert_dir: Path | None = None) -> WebhookProcess:
        webhook = launch(cert_dir or issue_certs(tmp_path / "certs"), *extra)
        started.append(webhook)
        return webhook

    yield start
    for webhook in started:
        stop(webhook)


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    """One webhook shared by the tests that only send requests (scheduler name kube-batch)."""
    process = launch(
        issue_certs(tmp_path_factory.mktemp("certs")), "--scheduler-name", "kube-batch"
    )
    yield process
    stop(process)


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """`vcjob local up` without the node agent, for what kubectl users see of the webhook: one
    cluster for the folder's modules (they create only uniquely named objects)."""
    with running_cluster(tmp_path_factory.mktemp("kubectl"), simulator=False) as running:
        yield running
