"""Certificate rotation under load: the real `vcjob webhook` process serves AdmissionReviews over
TLS while its certificate files are replaced by a new pair, from the same CA (a serving renewal)
or from a new CA that clients trust through the overlap bundle (old CA + new CA, as self mode
publishes it in `caBundle` before switching). No request may fail, and new connections must get
the new certificate."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from cryptography import x509

from localcluster.running import free_port
from shared import certgen
from shared.labels import VALIDATE_PATH
from tests.support.polling import wait_for
from webhook.selfcerts import write_atomically

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOSTS = ["127.0.0.1", "localhost"]
LOAD_SECONDS = 5.0
THREADS = 2
STARTUP_TIMEOUT = 60.0
RELOAD_INTERVAL = 0.2

REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "rotation",
        "kind": {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"},
        "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"},
        "operation": "CREATE",
        "namespace": "default",
        "name": "demo",
        "userInfo": {"username": "tester"},
        "object": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "demo", "namespace": "default"},
            "spec": {
                "minAvailable": 1,
                "schedulerName": "volcano",
                "queue": "default",
                "tasks": [
                    {
                        "name": "worker",
                        "replicas": 1,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "main", "image": "busybox"}],
                            }
                        },
                    }
                ],
            },
        },
    },
}


@dataclass
class Webhook:
    url: str
    port: int
    ca_file: Path
    cert_file: Path
    key_file: Path
    log_file: Path
    process: subprocess.Popen[bytes] = field(repr=False)


def vcjob_command() -> list[str]:
    script = Path(sys.executable).with_name("vcjob")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from shared.cli import main; sys.exit(main())"]


@pytest.fixture
def webhook(tmp_path: Path) -> Iterator[Webhook]:
    ca = certgen.issue_ca()
    serving = certgen.issue_serving(ca, HOSTS)
    cert_file, key_file, ca_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    ca_file.write_bytes(ca.cert_pem)
    cert_file.write_bytes(serving.cert_pem)
    key_file.write_bytes(serving.key_pem)
    (tmp_path / "ca.key").write_bytes(ca.key_pem)
    port, health = free_port(), free_port()
    log_file = tmp_path / "webhook.log"
    argv = [
        *vcjob_command(),
        "webhook",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--health-port", str(health),
        "--metrics-port", str(free_port()),
        "--tls-cert-file", str(cert_file),
        "--tls-private-key-file", str(key_file),
        "--queue-check", "off",
        "--cert-reload-interval", str(RELOAD_INTERVAL),
        "--shutdown-delay", "0",
        "--log-format", "text",
    ]  # fmt: skip
    with log_file.open("wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    server = Webhook(
        f"https://127.0.0.1:{port}", port, ca_file, cert_file, key_file, log_file, process
    )

    def readyz() -> int:
        assert process.poll() is None, "webhook exited"
        return httpx.get(f"http://127.0.0.1:{health}/readyz", timeout=1).status_code

    try:
        try:
            wait_for(
                readyz,
                lambda code: code == 200,
                "the webhook ready",
                STARTUP_TIMEOUT,
                interval=0.1,
                retry_on=(httpx.HTTPError,),
            )
        except AssertionError as failed:
            raise AssertionError(f"{failed}\n{log_file.read_text()}") from None
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def served_certificate(server: Webhook, trust: Path | None = None) -> x509.Certificate:
    context = ssl.create_default_context(cafile=str(trust or server.ca_file))
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


@pytest.mark.parametrize("rotation", ["serving-certificate", "ca-with-overlap-bundle"])
def test_rotating_certificate_files_fails_no_request(
    webhook: Webhook, tmp_path: Path, rotation: str
) -> None:
    old_ca = certgen.KeyPair(webhook.ca_file.read_bytes(), (tmp_path / "ca.key").read_bytes())
    signer = old_ca
    trust = webhook.ca_file
    if rotation == "ca-with-overlap-bundle":
        signer = certgen.issue_ca()
        trust = tmp_path / "bundle.crt"
        trust.write_bytes(old_ca.cert_pem + signer.cert_pem)
    original = served_certificate(webhook, trust)
    failures: list[str] = []
    answered = [0] * THREADS
    stop = threading.Event()
    body = json.dumps(REVIEW).encode()

    def load(slot: int) -> None:
        while not stop.is_set():
            # A new client every few requests: handshakes happen throughout the rotation. The
            # timeout is kube-apiserver's default for a webhook call.
            with httpx.Client(verify=str(trust), timeout=10) as client:
                for _ in range(5):
                    try:
                        response = client.post(
                            webhook.url + VALIDATE_PATH,
                            content=body,
                            headers={"Content-Type": "application/json"},
                        )
                        review = response.json()
                        if response.status_code != 200 or review["response"]["uid"] != "rotation":
                            failures.append(f"{response.status_code}: {response.text[:200]}")
                        else:
                            answered[slot] += 1
                    except (httpx.HTTPError, ValueError, KeyError) as err:
                        failures.append(repr(err))

    threads = [threading.Thread(target=load, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    try:
        # The load runs for LOAD_SECONDS / 2 on each side of the rotation, and at least until
        # every thread has had answers on each side (a loaded machine may need longer for that).
        time.sleep(LOAD_SECONDS / 2)
        wait_for(lambda: list(answered), lambda counts: all(counts), "answers before the rotation")
        renewed = certgen.issue_serving(signer, HOSTS)
        # What self mode does: atomic replacement, key first and certificate last.
        write_atomically(webhook.key_file, renewed.key_pem, mode=0o600)
        write_atomically(webhook.cert_file, renewed.cert_pem, mode=0o644)
        time.sleep(LOAD_SECONDS / 2)  # the load's second half, across the reload
        wait_for(
            lambda: served_certificate(webhook, trust).serial_number,
            lambda serial: serial != original.serial_number,
            "the new certificate to be served",
            interval=RELOAD_INTERVAL,
        )
        swapped = list(answered)
        wait_for(
            lambda: list(answered),
            lambda counts: all(now > then for now, then in zip(counts, swapped, strict=True)),
            "answers after the new certificate is served",
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)

    assert not failures, f"{len(failures)} failed requests, e.g. {failures[:3]}"
    assert all(count > 0 for count in answered), answered
    served = served_certificate(webhook, trust)
    assert served.serial_number == renewed.certificate.serial_number
    assert served.issuer == signer.certificate.subject
    assert webhook.process.poll() is None
    assert "Traceback" not in webhook.log_file.read_text(errors="replace")
