"""A `vcjob webhook` process whose certificate files are empty (a Secret made empty, filled later by
another tool): it says so once and waits, serving health (alive, not ready), instead of failing
with OpenSSL's `[SSL] PEM lib`; it serves admission as soon as a pair is written, and a SIGTERM
during the wait stops it cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from localcluster.running import free_port
from shared import certgen
from tests.support.polling import wait_until

VCJOB = str(Path(sys.executable).with_name("vcjob"))


class Webhook:
    def __init__(self, cert_dir: Path) -> None:
        self.health = free_port()
        args = [
            VCJOB, "webhook", "--host", "127.0.0.1", "--port", "0",
            "--health-port", str(self.health), "--metrics-port", "0",
            "--tls-cert-file", str(cert_dir / "tls.crt"),
            "--tls-private-key-file", str(cert_dir / "tls.key"),
            "--queue-check", "off", "--cert-reload-interval", "0.2", "--shutdown-delay", "0.2",
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("VCJOB_WEBHOOK_")}
        self.proc = subprocess.Popen(
            args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
        )
        self.logs: list[dict[str, Any]] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            try:
                self.logs.append(json.loads(line))
            except ValueError:
                self.logs.append({"msg": line.rstrip()})

    def said(self, message: str) -> dict[str, Any] | None:
        return next((e for e in self.logs if e.get("msg") == message), None)

    def health_status(self, path: str) -> int | None:
        try:
            return httpx.get(f"http://127.0.0.1:{self.health}{path}", timeout=2).status_code
        except httpx.HTTPError:
            return None


@pytest.fixture
def empty_secret(tmp_path: Path) -> Path:
    (tmp_path / "tls.crt").write_bytes(b"")
    (tmp_path / "tls.key").write_bytes(b"")
    return tmp_path


@pytest.fixture
def webhook(empty_secret: Path) -> Iterator[Webhook]:
    started = Webhook(empty_secret)
    yield started
    if started.proc.poll() is None:
        started.proc.kill()
    started.proc.wait(10)


WAITING = "waiting for the serving certificate; the TLS listener starts once it loads"


def test_an_empty_pair_is_waited_for_then_served(webhook: Webhook, empty_secret: Path) -> None:
    wait_until("the webhook to say what it waits for", lambda: webhook.said(WAITING), 30)
    wait_until("health to answer", lambda: webhook.health_status("/healthz") == 200, 30)
    assert webhook.health_status("/readyz") == 503
    assert webhook.proc.poll() is None
    waiting = webhook.said(WAITING)
    assert waiting is not None and waiting["problem"] == f"{empty_secret / 'tls.crt'} is empty"
    assert not any("Traceback" in str(e) or "PEM lib" in str(e) for e in webhook.logs)

    bundle = certgen.issue(["127.0.0.1"])
    (empty_secret / "tls.key").write_bytes(bundle.serving.key_pem)
    (empty_secret / "tls.crt").write_bytes(bundle.serving.cert_pem)
    serving = wait_until("the webhook to serve", lambda: webhook.said("webhook serving"), 30)
    assert webhook.said("serving certificate found") is not None
    (empty_secret / "ca.crt").write_bytes(bundle.ca.cert_pem)
    answer = httpx.post(
        f"https://127.0.0.1:{serving['webhook']}/validate-batch-volcano-sh-v1alpha1-job",
        content=b"{}",
        headers={"Content-Type": "application/json"},
        verify=str(empty_secret / "ca.crt"),
        timeout=10,
    )
    assert answer.status_code == 400  # over TLS with the new pair: not a review
    wait_until("readiness", lambda: webhook.health_status("/readyz") == 200, 30)


def test_sigterm_while_waiting_stops_cleanly(webhook: Webhook) -> None:
    wait_until("the webhook to wait for its certificate", lambda: webhook.said(WAITING), 30)
    webhook.proc.send_signal(signal.SIGTERM)
    assert webhook.proc.wait(30) == 0
    wait_until("the last line", lambda: webhook.said("webhook stopped"), 10)
    assert not any("Traceback" in str(e) for e in webhook.logs)
