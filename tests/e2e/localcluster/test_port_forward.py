"""`kubectl port-forward` to a pod that really runs: kubectl tunnels its streams to
kube-apiserver, which speaks SPDY/3.1 to the node agent's kubelet API, which connects inside the
pod's network namespace. Every wait is bounded."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator

import httpx
import pytest
import yaml

from localcluster.running import LocalCluster, running_cluster, tools_env
from localcluster.simulator.runtime import runtime_available
from localcluster.tools import tool_path
from tests.support.polling import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(runtime_available() is not None, reason=str(runtime_available())),
]

WAIT = 60.0

SERVER = """
import http.server, os
name = os.environ["POD_NAME"]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (name + " " + self.path).encode() * (20000 if self.path == "/big" else 1)
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("", 8080), Handler).serve_forever()
"""

# Counts what a connection sends until the client half-closes it, then answers the count.
COUNTER = """
import socket
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("", 8080))
server.listen()
while True:
    conn, _ = server.accept()
    total = 0
    while chunk := conn.recv(65536):
        total += len(chunk)
    conn.sendall(str(total).encode())
    conn.close()
"""


def manifest(name: str, image: str, script: str = SERVER) -> str:
    container = {
        "name": "main",
        "image": image,
        "command": ["python", "-c", script],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
    }
    document = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }
    return yaml.safe_dump(document)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    extra = ["--bare", "--run-image", "python=python"]
    with running_cluster(
        tmp_path_factory.mktemp("forward"), webhook=False, extra_args=extra
    ) as local:
        yield local


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_ready(cluster: LocalCluster, name: str) -> None:
    cluster.kubectl("wait", "--for=condition=Ready", f"pod/{name}", f"--timeout={int(WAIT)}s")


def start_forward(cluster: LocalCluster, *args: str) -> tuple[subprocess.Popen[str], list[str]]:
    kubectl = tool_path("kubectl")
    assert kubectl is not None
    process = subprocess.Popen(
        [str(kubectl), "--kubeconfig", str(cluster.kubeconfig), "port-forward", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=tools_env(),
    )
    lines: list[str] = []

    def collect() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)

    threading.Thread(target=collect, daemon=True).start()
    return process, lines


def wait_listening(process: subprocess.Popen[str], lines: list[str]) -> None:
    def output() -> str:
        assert process.poll() is None, "".join(lines)
        return "".join(lines)

    wait_for(output, lambda text: "Forwarding from" in text, "kubectl listening", WAIT, 0.1)


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def test_port_forward_reaches_the_pod(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "-f", "-", input=manifest("web", "python:3"))
    wait_ready(cluster, "web")
    local = free_port()
    process, lines = start_forward(cluster, "pod/web", f"{local}:8080", "--address", "127.0.0.1")
    try:
        wait_listening(process, lines)
        with httpx.Client(timeout=10) as client:
            assert client.get(f"http://127.0.0.1:{local}/a").text == "web /a"
            assert client.get(f"http://127.0.0.1:{local}/big").text == "web /big" * 20000
        # A fresh connection is a fresh pair of streams on the same tunnel.
        assert httpx.get(f"http://127.0.0.1:{local}/b", timeout=10).text == "web /b"
        assert process.poll() is None, "".join(lines)
    finally:
        stop(process)


def test_port_forward_to_a_closed_port_reports_on_the_error_stream(cluster: LocalCluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=manifest("web", "python:3"))
    wait_ready(cluster, "web")
    local = free_port()
    process, lines = start_forward(cluster, "pod/web", f"{local}:9999", "--address", "127.0.0.1")
    try:
        wait_listening(process, lines)
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{local}/", timeout=10)
        wait_for(
            lambda: "".join(lines),
            lambda text: "failed to connect to localhost:9999" in text,
            "kubectl reporting the closed port",
            WAIT,
            0.1,
        )
        assert any("error forwarding port 9999 to pod" in line for line in lines)
    finally:
        stop(process)


def test_a_simulated_pod_is_refused_with_a_reason(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "-f", "-", input=manifest("sim", "busybox:1"))
    wait_ready(cluster, "sim")
    result = cluster.kubectl("port-forward", "pod/sim", f"{free_port()}:8080", check=False)
    assert result.returncode != 0
    assert "pod default/sim is simulated" in result.stdout + result.stderr


def test_port_forward_needs_create_on_pods_portforward(cluster: LocalCluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=manifest("web", "python:3"))
    wait_ready(cluster, "web")
    cluster.kubectl("create", "serviceaccount", "forwarder")
    cluster.kubectl("create", "role", "reader", "--verb=get", "--resource=pods")
    cluster.kubectl(
        "create", "rolebinding", "reader", "--role=reader", "--serviceaccount=default:forwarder"
    )
    who = "--as=system:serviceaccount:default:forwarder"
    refused = cluster.kubectl("port-forward", who, "pod/web", f"{free_port()}:8080", check=False)
    assert refused.returncode != 0
    assert 'cannot create resource "pods/portforward"' in refused.stderr
    cluster.kubectl("create", "role", "forward", "--verb=create", "--resource=pods/portforward")
    cluster.kubectl(
        "create", "rolebinding", "forward", "--role=forward", "--serviceaccount=default:forwarder"
    )
    local = free_port()
    process, lines = start_forward(cluster, who, "pod/web", f"{local}:8080", "--address=127.0.0.1")
    try:
        wait_listening(process, lines)
        assert httpx.get(f"http://127.0.0.1:{local}/sa", timeout=10).text == "web /sa"
    finally:
        stop(process)


def test_uploads_and_half_closes_reach_the_pod(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "-f", "-", input=manifest("counter", "python:3", COUNTER))
    wait_ready(cluster, "counter")
    local = free_port()
    process, lines = start_forward(cluster, "pod/counter", f"{local}:8080", "--address=127.0.0.1")
    try:
        wait_listening(process, lines)
        with socket.create_connection(("127.0.0.1", local), timeout=10) as conn:
            conn.sendall(b"x" * 3_000_000)  # far beyond SPDY's 64 KiB initial window
            conn.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := conn.recv(100):
                answer += chunk
        assert answer == b"3000000"
    finally:
        stop(process)
