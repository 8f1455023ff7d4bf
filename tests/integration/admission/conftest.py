"""A throwaway TLS admission webhook whose behaviour is chosen by the request path."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from localcluster.tools import tool_path
from shared import certgen


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class _Handler(BaseHTTPRequestHandler):
    server: _WebhookServer

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        return

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        path = self.path.split("?")[0]
        review = json.loads(body)
        self.server.calls.append((self.path, self.headers.get("Host", ""), review))
        uid = review["request"]["uid"]
        response: dict[str, Any] = {"uid": uid, "allowed": True}
        if path == "/allow":
            response["warnings"] = ["looks fine"]
        elif path == "/deny":
            response = {
                "uid": uid,
                "allowed": False,
                "status": {
                    "code": 422,
                    "reason": "Invalid",
                    "message": "spec.x: Required value",
                    "details": {
                        "causes": [
                            {
                                "field": "spec.x",
                                "reason": "FieldValueRequired",
                                "message": "spec.x: Required value",
                            }
                        ]
                    },
                },
            }
        elif path == "/deny-plain":
            response = {"uid": uid, "allowed": False, "status": {"message": "not on my watch"}}
        elif path == "/deny-silently":
            response = {"uid": uid, "allowed": False}
        elif path == "/patch":
            ops = [{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}}]
            response.update(patchType="JSONPatch", patch=_b64(json.dumps(ops).encode()))
        elif path == "/patch-again":
            ops = [{"op": "add", "path": "/metadata/labels/second", "value": "yes"}]
            response.update(patchType="JSONPatch", patch=_b64(json.dumps(ops).encode()))
        elif path == "/slow":
            time.sleep(1.5)
        elif path == "/garbage":
            self._send(200, b"this is not json")
            return
        elif path == "/wrong-uid":
            response["uid"] = "someone-else"
        elif path == "/error":
            self._send(500, b"boom")
            return
        self._send(
            200,
            json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": response,
                }
            ).encode(),
        )

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _WebhookServer(ThreadingHTTPServer):
    daemon_threads = True
    calls: list[tuple[str, str, dict[str, Any]]]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out hang up mid-answer; that is expected here."""


@dataclass
class Webhook:
    port: int
    ca_bundle: str
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"


@pytest.fixture(scope="session")
def webhook() -> Iterator[Webhook]:
    bundle = certgen.issue(["127.0.0.1", "hook.webhooks.svc"])
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert.write_bytes(bundle.serving.cert_pem)
        key.write_bytes(bundle.serving.key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
    server = _WebhookServer(("127.0.0.1", 0), _Handler)
    server.calls = []
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield Webhook(server.server_address[1], _b64(bundle.ca.cert_pem), server.calls)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@dataclass
class LocalServer:
    kubeconfig: Path

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        kubectl = tool_path("kubectl")
        assert kubectl is not None, (
            "kubectl is not installed (python -m localcluster.tools install)"
        )
        return subprocess.run(
            [str(kubectl), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
        )


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """`python -m localcluster.apiserver` on a free port, with its kubeconfig."""
    workdir = tmp_path_factory.mktemp("admission-cluster")
    log = workdir / "apiserver.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "localcluster.apiserver", "--port", "0", "--dir", str(workdir)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    kubeconfig = workdir / "kubeconfig"
    try:
        deadline = time.monotonic() + 30
        server = LocalServer(kubeconfig)
        while True:
            assert process.poll() is None, f"the API server exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"no API server: {log.read_text()[-2000:]}"
            if kubeconfig.exists() and server.kubectl("version").returncode == 0:
                break
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
