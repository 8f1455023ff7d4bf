"""The webhook as the API server meets it: a real uvicorn process over TLS, driven by httpx and
curl; certificate rotation under load; graceful shutdown."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509

from shared import certgen, labels
from tests.support import wait_until

# The fixture's process handle (conftest.WebhookProcess): url, ports, ca, logs, proc.
WebhookProcess = Any
StartWebhook = Callable[..., Any]


def job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "demo", "namespace": "ns"},
        "spec": {
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
            **spec,
        },
    }


def _with_replicas(replicas: Any) -> dict[str, Any]:
    raw = job()
    raw["spec"]["tasks"][0]["replicas"] = replicas
    return raw


def review(obj: Any, operation: str = "CREATE") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "3a1c-uid",
            "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"},
            "operation": operation,
            "object": obj,
        },
    }


def curl(webhook: WebhookProcess, path: str, body_file: Path) -> tuple[int, Any]:
    exe = shutil.which("curl")
    assert exe, "curl is needed on PATH for the wire tests"
    result = subprocess.run(
        [
            exe, "-sS", "--max-time", "10", "--cacert", webhook.ca,
            f"https://127.0.0.1:{webhook.ports['webhook']}{path}",
            "-H", "Content-Type: application/json", "-d", f"@{body_file}",
            "-w", "\n%{http_code}",
        ],
        capture_output=True, text=True, timeout=20, check=True,
    )  # fmt: skip
    body, _, code = result.stdout.rpartition("\n")
    return int(code), json.loads(body)


CURL_CASES = [
    pytest.param(review(job()), 200, True, "", id="valid"),
    pytest.param(
        review(job(minAvailable=3)),
        200,
        False,
        "spec.minAvailable: Invalid value: 3: job 'minAvailable' should not be greater than total "
        "replicas (2, the sum of the tasks' replicas)",
        id="invalid",
    ),
    pytest.param(
        review(_with_replicas("two")),
        200,
        False,
        'spec.tasks[0].replicas: Invalid value: "two": must be an integer',
        id="garbage-object",
    ),
    pytest.param({"hello": "world"}, 400, None, "request is missing", id="not-a-review"),
]


@pytest.mark.parametrize(("body", "code", "allowed", "message"), CURL_CASES)
def test_curl_against_the_tls_endpoint(
    webhook: WebhookProcess,
    tmp_path: Path,
    body: dict[str, Any],
    code: int,
    allowed: bool | None,
    message: str,
) -> None:
    body_file = tmp_path / "review.json"
    body_file.write_text(json.dumps(body))
    status, answer = curl(webhook, labels.VALIDATE_PATH, body_file)
    assert status == code
    if allowed is None:
        assert message in answer["error"]
        return
    assert answer["response"]["uid"] == "3a1c-uid"
    assert answer["response"]["allowed"] is allowed
    if message:
        assert answer["response"]["status"]["message"] == message


def test_httpx_with_the_ca_mutates_validates_and_reports(webhook: WebhookProcess) -> None:
    with httpx.Client(verify=ssl.create_default_context(cafile=webhook.ca), timeout=10) as client:
        mutated = client.post(webhook.url + labels.MUTATE_PATH, json=review(job())).json()
        patch = json.loads(base64.b64decode(mutated["response"]["patch"]))
        assert {"op": "add", "path": "/spec/schedulerName", "value": "kube-batch"} in patch
        validated = client.post(webhook.url + labels.VALIDATE_PATH, json=review(job()))
        assert validated.json()["response"]["allowed"] is True
        wrong_type = client.post(
            webhook.url + labels.VALIDATE_PATH,
            content=b"{}",
            headers={"Content-Type": "text/plain"},
        )
        assert wrong_type.status_code == 415
    assert httpx.get(webhook.health_url + "/healthz", timeout=5).status_code == 200
    assert httpx.get(webhook.health_url + "/readyz", timeout=5).status_code == 200
    metrics = httpx.get(webhook.metrics_url + "/metrics", timeout=5).text
    assert (
        f'controller_runtime_webhook_requests_total{{code="415",webhook="{labels.VALIDATE_PATH}"}}'
        in metrics
    )


def test_an_untrusted_client_is_refused(webhook: WebhookProcess) -> None:
    with pytest.raises(httpx.ConnectError), httpx.Client(timeout=5) as client:
        client.post(webhook.url + labels.VALIDATE_PATH, json=review(job()))


def _served_serial(webhook: WebhookProcess) -> int:
    context = ssl.create_default_context(cafile=webhook.ca)
    with (
        socket.create_connection(("127.0.0.1", webhook.ports["webhook"]), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def _request_loop(webhook: WebhookProcess, stop: threading.Event, outcome: dict[str, int]) -> None:
    """New connections (new handshakes) and kept-alive ones, counting any failure."""
    context = ssl.create_default_context(cafile=webhook.ca)
    body = review(job())
    with httpx.Client(verify=context, timeout=10) as kept_alive:
        while not stop.is_set():
            for client in (kept_alive, None):
                try:
                    if client is None:
                        with httpx.Client(verify=context, timeout=10) as fresh:
                            response = fresh.post(webhook.url + labels.VALIDATE_PATH, json=body)
                    else:
                        response = client.post(webhook.url + labels.VALIDATE_PATH, json=body)
                    ok = response.status_code == 200 and response.json()["response"]["allowed"]
                    outcome["ok" if ok else "failed"] += 1
                except httpx.HTTPError:
                    outcome["failed"] += 1


def _rotate_and_check(webhook: WebhookProcess, replace: Callable[[certgen.KeyPair], None]) -> None:
    ca = certgen.KeyPair(
        (webhook.cert_dir / "ca.crt").read_bytes(), (webhook.cert_dir / "ca.key").read_bytes()
    )
    before = _served_serial(webhook)
    stop = threading.Event()
    outcome = {"ok": 0, "failed": 0}
    loop = threading.Thread(target=_request_loop, args=(webhook, stop, outcome))
    loop.start()
    try:
        # Load on both sides of the rotation, counted in answers rather than in time: a loaded
        # machine answers fewer requests in a given half second.
        wait_until("answers before the rotation", lambda: outcome["ok"] >= 10, interval=0.05)
        new_pair = certgen.issue_serving(ca, ["127.0.0.1", "localhost"])
        replace(new_pair)
        new_serial = x509.load_pem_x509_certificate(new_pair.cert_pem).serial_number
        wait_until(
            "the new certificate to be served",
            lambda: _served_serial(webhook) == new_serial,
            interval=0.1,
        )
        swapped = outcome["ok"]
        wait_until(
            "answers after the rotation", lambda: outcome["ok"] >= swapped + 10, interval=0.05
        )
    finally:
        stop.set()
        loop.join(timeout=20)
    assert before != new_serial
    assert outcome["failed"] == 0, outcome
    assert outcome["ok"] > 10, outcome


def _certs_with_ca_key(tmp_path: Path) -> Path:
    """A CA whose key the test keeps, to sign the rotated serving certificate."""
    bundle = certgen.issue(["127.0.0.1", "localhost"])
    out = tmp_path / "pki"
    certgen.write_bundle(bundle, out)
    (out / "ca.key").write_bytes(bundle.ca.key_pem)
    return out


def test_certificate_files_replaced_under_load(start_webhook: StartWebhook, tmp_path: Path) -> None:
    certs = _certs_with_ca_key(tmp_path)
    webhook = start_webhook(cert_dir=certs)

    def replace(pair: certgen.KeyPair) -> None:
        # Written in place, one file after the other with a gap between them (no condition to
        # wait for: the gap is the careless rotation the webhook must survive).
        (certs / "tls.crt").write_bytes(pair.cert_pem)
        time.sleep(0.3)
        (certs / "tls.key").write_bytes(pair.key_pem)

    _rotate_and_check(webhook, replace)


def test_kubernetes_secret_symlink_swap_under_load(
    start_webhook: StartWebhook, tmp_path: Path
) -> None:
    source = _certs_with_ca_key(tmp_path)
    # The layout of a Secret volume: files are symlinks through `..data` to a timestamped folder.
    mount = tmp_path / "secret"
    first = mount / "..2026_11_22_00_00_00.1"
    first.mkdir(parents=True)
    for name in ("tls.crt", "tls.key"):
        shutil.copy(source / name, first / name)
    (mount / "..data").symlink_to(first.name)
    for name in ("tls.crt", "tls.key"):
        (mount / name).symlink_to(f"..data/{name}")
    shutil.copy(source / "ca.crt", mount / "ca.crt")
    shutil.copy(source / "ca.key", mount / "ca.key")
    webhook = start_webhook(cert_dir=mount)

    def replace(pair: certgen.KeyPair) -> None:
        second = mount / "..2026_11_22_00_10_00.2"
        second.mkdir()
        (second / "tls.crt").write_bytes(pair.cert_pem)
        (second / "tls.key").write_bytes(pair.key_pem)
        (mount / "..data_tmp").symlink_to(second.name)
        os.replace(mount / "..data_tmp", mount / "..data")
        shutil.rmtree(first)

    _rotate_and_check(webhook, replace)


def test_sigterm_drops_readiness_keeps_serving_then_exits(start_webhook: StartWebhook) -> None:
    # The request below must land within the delay: leave a loaded machine room for it.
    webhook = start_webhook("--shutdown-delay", "6")
    context = ssl.create_default_context(cafile=webhook.ca)
    assert httpx.get(webhook.health_url + "/readyz", timeout=5).status_code == 200
    webhook.terminate()
    wait_until(
        "readiness to drop",
        lambda: httpx.get(webhook.health_url + "/readyz", timeout=5).status_code == 503,
        5,
        interval=0.05,
    )
    with httpx.Client(verify=context, timeout=5) as client:
        response = client.post(webhook.url + labels.VALIDATE_PATH, json=review(job()))
    assert response.json()["response"]["allowed"] is True
    assert webhook.proc.wait(timeout=30) == 0
    # The log is read by a thread of its own, which may not have reached the last line yet.
    wait_until(
        "the webhook's last log line",
        lambda: any(e.get("msg") == "webhook stopped" for e in webhook.logs),
        timeout=20,
        interval=0.05,
    )


# ---------------------------------------------------------------------------------------------
# Hardening: protocols and ciphers, stalled and vanishing clients, deep nesting


def _handshake(webhook: WebhookProcess, context: ssl.SSLContext) -> tuple[str, str]:
    context.load_verify_locations(webhook.ca)
    with (
        socket.create_connection(("127.0.0.1", webhook.ports["webhook"]), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        version, cipher = tls.version(), tls.cipher()
    assert version is not None and cipher is not None
    return version, cipher[0]


def _tls12(ciphers: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(ciphers)
    return context


def test_tls12_client_offering_only_cbc_suites_is_refused(webhook: WebhookProcess) -> None:
    # uvicorn's default cipher string ("TLSv1") would agree on ECDHE-ECDSA-AES128-SHA here.
    cbc = "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384:ECDHE-ECDSA-AES128-SHA:"
    cbc += "ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES128-SHA256:ECDHE-RSA-AES256-SHA384:AES128-SHA256"
    with pytest.raises(ssl.SSLError, match=r"HANDSHAKE_FAILURE|NO_SHARED_CIPHER|UNEXPECTED_EOF"):
        _handshake(webhook, _tls12(cbc))


def test_tls12_gets_ecdhe_with_aead_and_tls13_is_served(webhook: WebhookProcess) -> None:
    version, cipher = _handshake(webhook, _tls12("ALL"))
    assert version == "TLSv1.2"
    assert cipher.startswith("ECDHE-") and ("GCM" in cipher or "CHACHA20" in cipher), cipher
    version, _ = _handshake(webhook, ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
    assert version == "TLSv1.3"


def _upload(webhook: WebhookProcess, declared: int, sent: bytes) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=webhook.ca)
    raw = socket.create_connection(("127.0.0.1", webhook.ports["webhook"]), timeout=10)
    tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
    tls.sendall(
        f"POST {labels.VALIDATE_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n".encode()
        + sent
    )
    return tls


def _in_flight(webhook: WebhookProcess) -> float:
    metrics = httpx.get(webhook.metrics_url + "/metrics", timeout=5).text
    line = next(x for x in metrics.splitlines() if x.startswith("vcjob_webhook_requests_in_flight"))
    return float(line.split()[-1])


def test_stalled_uploads_are_cut_off_and_bounded(start_webhook: StartWebhook) -> None:
    webhook = start_webhook("--read-timeout", "1", "--max-concurrent-requests", "2")
    stalled = [_upload(webhook, 100_000, b'{"request": ') for _ in range(2)]
    try:
        # Both stalled requests hold their slot once the webhook counts them in flight.
        wait_until("two requests in flight", lambda: _in_flight(webhook) == 2, interval=0.02)
        started = time.monotonic()
        third = _upload(webhook, 100_000, b'{"request": ')
        assert third.recv(64).startswith(b"HTTP/1.1 429")
        assert time.monotonic() - started < 0.9  # fast: before the others' deadline
        third.close()
        for tls in stalled:
            assert tls.recv(64).startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 5
    finally:
        for tls in stalled:
            tls.close()


def test_a_client_gone_mid_body_logs_one_short_line(start_webhook: StartWebhook) -> None:
    webhook = start_webhook("--log-level", "info")
    _upload(webhook, 100_000, b'{"request": ' + b" " * 50_000).close()
    wait_until(
        "the disconnection logged",
        lambda: any("disconnected" in str(e.get("msg")) for e in webhook.logs),
        timeout=20,
        interval=0.05,
    )
    # Every line the webhook wrote has been read once its last one has.
    webhook.terminate()
    wait_until(
        "the webhook's last log line",
        lambda: any(e.get("msg") == "webhook stopped" for e in webhook.logs),
        timeout=20,
        interval=0.05,
    )
    text = json.dumps(webhook.logs)
    assert "Exception in ASGI application" not in text
    assert "Traceback" not in text


def test_deep_nesting_is_denied_without_a_traceback(webhook: WebhookProcess) -> None:
    obj = job()
    obj["metadata"]["annotations"] = "DEEP"
    body = json.dumps(review(obj)).replace('"DEEP"', '{"a":' * 500 + "1" + "}" * 500)
    response = httpx.post(
        webhook.url + labels.VALIDATE_PATH,
        content=body,
        headers={"Content-Type": "application/json"},
        verify=ssl.create_default_context(cafile=webhook.ca),
        timeout=10,
    )
    answer = response.json()["response"]
    assert answer["allowed"] is False
    assert "more than 100 levels (the webhook's limit)" in answer["status"]["message"]
    assert "Traceback" not in json.dumps(webhook.logs)


def _tls_connection(webhook: WebhookProcess) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=webhook.ca)
    raw = socket.create_connection(("127.0.0.1", webhook.ports["webhook"]), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def test_a_withheld_or_dribbled_request_head_is_cut_off(start_webhook: StartWebhook) -> None:
    webhook = start_webhook("--read-timeout", "1")
    silent = _tls_connection(webhook)
    partial = _tls_connection(webhook)
    kept_alive = _tls_connection(webhook)
    try:
        started = time.monotonic()
        partial.sendall(f"POST {labels.VALIDATE_PATH} HTTP/1.1\r\nHost: 127".encode())
        body = json.dumps(review(job())).encode()
        kept_alive.sendall(
            f"POST {labels.VALIDATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        assert kept_alive.recv(64).startswith(b"HTTP/1.1 200")
        kept_alive.sendall(b"POST / HTTP/1.1\r\n")  # a second request that never finishes
        for tls in (silent, partial, kept_alive):
            while tls.recv(4096):  # the rest of an answer, then the close
                pass
        assert time.monotonic() - started < 4
    finally:
        for tls in (silent, partial, kept_alive):
            tls.close()
    message = "request head not received in time; connection closed"
    wait_until(
        "three cut-off connections logged",
        lambda: sum(e.get("msg") == message for e in webhook.logs) >= 3,
        timeout=20,
        interval=0.05,
    )


def _post_review(tls: ssl.SSLSocket) -> bytes:
    body = json.dumps(review(job())).encode()
    tls.sendall(
        f"POST {labels.VALIDATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        chunk = tls.recv(65536)
        assert chunk, f"the webhook closed the connection mid-answer: {answer!r}"
        answer += chunk
    return answer


def test_an_idle_kept_alive_connection_outlasts_uvicorns_five_seconds(
    webhook: WebhookProcess,
) -> None:
    """The API server reuses idle connections for up to 90 s and does not resend a POST that
    met a closing connection: the webhook must not be the side that closes them first."""
    tls = _tls_connection(webhook)
    try:
        assert _post_review(tls).startswith(b"HTTP/1.1 200")
        tls.settimeout(7.0)  # past uvicorn's own 5 s keep-alive
        with pytest.raises(TimeoutError):
            closed = tls.recv(1)
            pytest.fail(f"the webhook closed an idle connection: {closed!r}")
        tls.settimeout(10.0)
        assert _post_review(tls).startswith(b"HTTP/1.1 200")
    finally:
        tls.close()
