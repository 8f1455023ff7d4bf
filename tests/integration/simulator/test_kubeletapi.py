"""The node agent's kubelet API against pods that really run: a real ProcessRuntime starts the
pod's sandbox and containers (network, mount and UTS namespaces, a private root), and the tests
drive the server over real TLS (verified with the CA it wrote) with `httpx` for logs and a small
SPDY/3.1 client for exec, attach and port-forward, as kube-apiserver does.

Only the API server the runtime reports pod status to is a stand-in: it accepts every write.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import httpx
import pytest

from localcluster.simulator import spdy
from localcluster.simulator.client import KubeClient
from localcluster.simulator.images import ImageMapping
from localcluster.simulator.kubeletapi import KubeletServer
from localcluster.simulator.kubeletpods import NodePods, PodEntry
from localcluster.simulator.runtime import ProcessRuntime, runtime_available
from tests.support.polling import wait_until

pytestmark = pytest.mark.skipif(runtime_available() is not None, reason=str(runtime_available()))

NODE = "node-1"
NAMESPACE = "team-a"
WAIT = 30.0
PORT = 28080

HTTP_SERVER = (
    f"import http.server as h; h.test(h.SimpleHTTPRequestHandler, port={PORT}, bind='127.0.0.1')"
)


class StatusWriter:
    """The API server the runtime reports to: every status write and deletion succeeds."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def patch(self, *_args: Any, **_kwargs: Any) -> dict[str, Any]:
        return {}

    def request(self, *_args: Any, **_kwargs: Any) -> dict[str, Any]:
        return {}

    def delete(self, _resource: Any, name: str, *_args: Any, **_kwargs: Any) -> None:
        self.deleted.append(name)


def container(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["sh", "-c", script], **extra}


REAL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": NAMESPACE, "uid": "uid-web-1"},
    "spec": {
        "nodeName": NODE,
        "restartPolicy": "Always",
        "automountServiceAccountToken": False,
        "containers": [
            container(
                "server",
                f'exec "{sys.executable}" -c "{HTTP_SERVER}"',
                env=[{"name": "GREETING", "value": "hello from web"}],
            ),
            container("printer", "for i in 1 2 3 4 5; do echo line $i; done; exec sleep 1000"),
            # Quiet: the tests write its output (its log file) themselves, then end its run.
            container("followed", "exec sleep 1000"),
            container("attached", "exec sleep 1000"),
            container("crasher", "echo crash; exit 1"),
        ],
    },
}
SIMULATED_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "sim", "namespace": NAMESPACE, "uid": "uid-sim-1"},
    "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "nginx"}]},
}


@dataclass
class Node:
    server: KubeletServer
    runtime: ProcessRuntime
    base: str

    def entry(self) -> PodEntry | None:
        return self.server.pods.find_pod(NAMESPACE, "web")

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, verify=ssl_context(self.server), timeout=WAIT)


def ssl_context(server: KubeletServer) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(server.ca_file))


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("kubelet")
    kubeconfig = root / "kubeconfig"
    kubeconfig.write_text(
        json.dumps({"clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}]})
    )
    stop = threading.Event()
    runtime = ProcessRuntime(
        cast(KubeClient, StatusWriter()),
        kubeconfig,
        root / "pods",
        [ImageMapping("busybox", ("sh",))],
        stop,
    )
    known = {("team-a", "web"): REAL_POD, ("team-a", "sim"): SIMULATED_POD}
    pods = NodePods(lambda ns, name: known.get((ns, name)), runtime, NODE)
    server = KubeletServer(pods, "127.0.0.1", 0, root / "kubelet")
    port = server.start()
    runtime.sync(REAL_POD, "127.0.0.1")
    try:
        result = Node(server, runtime, f"https://127.0.0.1:{port}")

        def started() -> bool:
            entry = result.entry()
            return entry is not None and all(c.pid for c in entry.containers[:4])

        wait_until("the pod's containers to run", started, WAIT)
        yield result
    finally:
        stop.set()
        runtime.shutdown()
        server.stop()


# -- a small SPDY/3.1 client -------------------------------------------------------------------


@dataclass
class ClientStream:
    data: bytearray = field(default_factory=bytearray)
    fin: bool = False
    reset: bool = False
    replied: bool = False


class SpdyClient:
    """Upgrades one TLS connection to SPDY/3.1 and opens streams on it, as client-go does; one
    thread does all the reading and writing (an SSL socket is not shared between threads)."""

    def __init__(self, server: KubeletServer, path: str, protocols: list[str]) -> None:
        raw = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)
        self.sock = ssl_context(server).wrap_socket(raw, server_hostname="127.0.0.1")
        offers = "".join(f"X-Stream-Protocol-Version: {p}\r\n" for p in protocols)
        self.sock.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
                f"Upgrade: SPDY/3.1\r\n{offers}Content-Length: 0\r\n\r\n"
            ).encode()
        )
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            chunk = self.sock.recv(65536)
            assert chunk, f"connection closed during the upgrade: {buffer!r}"
            buffer += chunk
        head, _, rest = buffer.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        self.body = rest
        self.codec = spdy.HeaderCodec()
        self.frames = spdy.FrameReader()
        self.streams: dict[int, ClientStream] = {}
        self.goaway = False
        self.closed = False
        self._next_id = 1
        if self.status == 101:
            self.sock.settimeout(0.5)  # `wait` polls, checking its deadline in between
            self._on_bytes(rest)
            self.body = b""
        else:
            length = int(self.headers.get("content-length", "0"))
            while len(self.body) < length:
                self.body += self.sock.recv(65536)

    def _on_bytes(self, chunk: bytes) -> None:
        for frame in self.frames.feed(chunk):
            if isinstance(frame, spdy.DataFrame):
                stream = self.streams[frame.stream_id]
                stream.data += frame.data
                stream.fin = stream.fin or frame.fin
            elif frame.kind == spdy.SYN_REPLY:
                stream_id = int.from_bytes(frame.payload[:4], "big") & spdy.STREAM_MASK
                self.codec.decode(frame.payload[4:])
                self.streams[stream_id].replied = True
            elif frame.kind == spdy.RST_STREAM:
                self.streams[spdy.parse_stream_id(frame)].reset = True
            elif frame.kind == spdy.GOAWAY:
                self.goaway = True

    def wait(self, what: str, check: Callable[[], bool]) -> None:
        """Read frames until `check()` holds."""
        deadline = time.monotonic() + WAIT
        while not check():
            if self.closed:
                raise AssertionError(f"the server closed the connection before {what}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            self.closed = not chunk
            self._on_bytes(chunk)

    def open(self, **headers: str) -> int:
        stream_id = self._next_id
        self._next_id += 2
        self.streams[stream_id] = ClientStream()
        block = self.codec.encode({k.lower(): [v] for k, v in headers.items()})
        self.sock.sendall(spdy.syn_stream(stream_id, block))
        return stream_id

    def send(self, stream_id: int, data: bytes, fin: bool = False) -> None:
        self.sock.sendall(spdy.data(stream_id, data, fin=fin))

    def read_all(self, stream_id: int) -> bytes:
        """Everything the server writes on the stream, once it has closed its half."""
        stream = self.streams[stream_id]
        self.wait(f"the end of stream {stream_id}", lambda: stream.fin or stream.reset)
        return bytes(stream.data)

    def close(self) -> None:
        self.sock.close()


def exec_path(container_name: str, *command: str, pod: str = "web", **flags: str) -> str:
    query = "&".join(f"command={quote(c, safe='')}" for c in command)
    options = {"output": "1", "error": "1", **flags}
    query += "".join(f"&{k}={v}" for k, v in options.items())
    return f"/exec/{NAMESPACE}/{pod}/{container_name}?{query}"


@dataclass
class ExecResult:
    stdout: bytes
    stderr: bytes
    status: dict[str, Any]
    protocol: str


def run_exec(node: Node, path: str, stdin: bytes | None = None, tty: bool = False) -> ExecResult:
    client = SpdyClient(node.server, path, ["v4.channel.k8s.io", "v3.channel.k8s.io"])
    try:
        assert client.status == 101, client.body
        error = client.open(streamtype="error")
        stdout = client.open(streamtype="stdout")
        stderr = client.open(streamtype="stderr") if not tty else None
        resize = client.open(streamtype="resize") if tty else None
        feed = client.open(streamtype="stdin") if stdin is not None else None
        if resize is not None:
            client.send(resize, b'{"Width":100,"Height":30}')
        if feed is not None and stdin is not None:
            client.send(feed, stdin, fin=True)
        out = client.read_all(stdout)
        err = client.read_all(stderr) if stderr is not None else b""
        status = json.loads(client.read_all(error))
        client.wait("the server's GOAWAY", lambda: client.goaway)
        return ExecResult(out, err, status, client.headers["x-stream-protocol-version"])
    finally:
        client.close()


# -- exec --------------------------------------------------------------------------------------


def test_exec_echo_writes_stdout_and_succeeds(node: Node) -> None:
    result = run_exec(node, exec_path("printer", "echo", "hi"))
    assert result.protocol == "v4.channel.k8s.io"
    assert (result.stdout, result.stderr) == (b"hi\n", b"")
    assert result.status == {"metadata": {}, "status": "Success"}


def test_exec_exit_code_comes_back_as_nonzero_exit_code_status(node: Node) -> None:
    result = run_exec(node, exec_path("printer", "sh", "-c", "echo oops >&2; exit 3"))
    assert result.stderr == b"oops\n"
    assert result.status["status"] == "Failure"
    assert result.status["reason"] == "NonZeroExitCode"
    assert result.status["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}


def test_exec_runs_inside_the_container_with_its_environment(node: Node) -> None:
    script = "echo $GREETING; cat /proc/sys/kernel/hostname"
    result = run_exec(node, exec_path("server", "sh", "-c", script))
    assert result.stdout.decode().splitlines() == ["hello from web", "web"]


def test_exec_shares_the_pods_network(node: Node) -> None:
    # The server container's listener on 127.0.0.1:28080 (0100007F:6DB0, state 0A) is seen from
    # another container of the pod, and from no other network namespace.
    def listening() -> bool:
        tcp = run_exec(node, exec_path("printer", "cat", "/proc/net/tcp")).stdout.decode()
        return any(" 0100007F:6DB0 " in line and " 0A " in line for line in tcp.splitlines())

    wait_until("the pod's server to listen", listening, WAIT)
    with open("/proc/net/tcp") as node_view:
        assert " 0100007F:6DB0 00000000:0000 0A " not in node_view.read()


def test_exec_copies_stdin_to_the_command(node: Node) -> None:
    result = run_exec(node, exec_path("printer", "cat", input="1"), stdin=b"typed\nin\n")
    assert result.stdout == b"typed\nin\n"
    assert result.status["status"] == "Success"


def test_exec_with_a_terminal(node: Node) -> None:
    script = "test -t 0 && test -t 1 && echo is-a-tty"
    result = run_exec(node, exec_path("printer", "sh", "-c", script, tty="1"), tty=True)
    assert result.stdout == b"is-a-tty\r\n"
    assert result.status["status"] == "Success"


def test_exec_of_a_missing_command_fails_with_its_exit_code(node: Node) -> None:
    result = run_exec(node, exec_path("printer", "no-such-command"))
    assert b"no-such-command" in result.stderr
    assert result.status["reason"] == "NonZeroExitCode"


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        (exec_path("printer", "true", pod="nope"), 404, "pod does not exist"),
        (exec_path("nope", "true"), 500, 'container not found (\\"nope\\")'),
        (exec_path("main", "true", pod="sim"), 400, "is simulated"),
        (f"/exec/{NAMESPACE}/web/printer?command=true", 400, "at least 1 of stdin"),
        (f"/portForward/{NAMESPACE}/sim", 400, "is simulated"),
        (f"/portForward/{NAMESPACE}/web/other-uid", 404, "pod not found"),
    ],
)
def test_bad_stream_requests_are_answered_before_the_upgrade(
    node: Node, path: str, status: int, says: str
) -> None:
    client = SpdyClient(node.server, path, ["v4.channel.k8s.io", "portforward.k8s.io"])
    client.close()
    assert client.status == status
    assert says in client.body.decode()
    with node.http() as http:
        assert http.get("/healthz").text == "ok"


def test_an_unsupported_protocol_is_refused(node: Node) -> None:
    client = SpdyClient(node.server, exec_path("printer", "true"), ["v9.channel.k8s.io"])
    client.close()
    assert client.status == 403
    assert "unable to negotiate protocol" in client.body.decode()


# -- attach ------------------------------------------------------------------------------------


def running_run(node: Node, name: str) -> tuple[int, Path]:
    """The container's live process and the log file of its run, once it runs."""
    found: list[tuple[int, Path]] = []

    def running() -> bool:
        entry = node.entry()
        run = entry.container(name) if entry is not None else None
        log_file = entry.log_file(name, run.restart_count) if entry and run else None
        if run is None or run.pid is None or log_file is None:
            return False
        found[:] = [(run.pid, log_file)]
        return True

    wait_until(f"container {name} to run", running, WAIT)
    return found[0]


def write_output(log_file: Path, text: str) -> None:
    with log_file.open("a") as output:  # what the container's stdout is
        output.write(text)


def test_attach_follows_the_output_until_the_run_ends(node: Node) -> None:
    pid, log_file = running_run(node, "attached")
    write_output(log_file, "before attach\n")
    path = f"/attach/{NAMESPACE}/web/attached?output=1&error=1"
    client = SpdyClient(node.server, path, ["v4.channel.k8s.io"])
    try:
        assert client.status == 101, client.body
        error = client.open(streamtype="error")
        stdout = client.open(streamtype="stdout")
        client.open(streamtype="stderr")
        client.wait("the streams to be accepted", lambda: client.streams[stdout].replied)
        write_output(log_file, "while attached\n")
        client.wait("the output", lambda: b"\n" in client.streams[stdout].data)
        os.kill(pid, signal.SIGKILL)
        output = client.read_all(stdout)
        status = json.loads(client.read_all(error))
    finally:
        client.close()
    assert output == b"while attached\n"
    assert status == {"metadata": {}, "status": "Success"}


def test_attach_with_stdin_is_refused_clearly(node: Node) -> None:
    path = f"/attach/{NAMESPACE}/web/printer?input=1&output=1"
    client = SpdyClient(node.server, path, ["v4.channel.k8s.io"])
    client.close()
    assert client.status == 400
    assert "attach with stdin is not supported" in json.loads(client.body)["message"]


# -- port-forward ------------------------------------------------------------------------------


def forward(client: SpdyClient, port: int, request_id: str, payload: bytes) -> tuple[bytes, bytes]:
    error = client.open(streamtype="error", port=str(port), requestID=request_id)
    data = client.open(streamtype="data", port=str(port), requestID=request_id)
    client.send(data, payload, fin=True)
    return client.read_all(data), client.read_all(error)


def test_port_forward_reaches_a_server_inside_the_pod(node: Node) -> None:
    client = SpdyClient(node.server, f"/portForward/{NAMESPACE}/web", ["portforward.k8s.io"])
    try:
        assert client.status == 101, client.body
        assert client.headers["x-stream-protocol-version"] == "portforward.k8s.io"
        refused_data, refused_error = forward(client, 9, "0", b"")
        answer, error = forward(client, PORT, "1", b"GET / HTTP/1.0\r\n\r\n")
    finally:
        client.close()
    assert refused_data == b""
    assert refused_error.decode().startswith(
        f"error forwarding port 9 to pod {NAMESPACE}/web, uid uid-web-1: failed to connect to "
        "localhost:9 inside namespace"
    )
    assert "connection refused" in refused_error.decode()
    assert answer.startswith(b"HTTP/1.0 200 OK"), answer[:200]
    assert error == b""


# -- logs --------------------------------------------------------------------------------------


def logs(node: Node, container_name: str, pod: str = "web", **query: str) -> httpx.Response:
    with node.http() as http:
        return http.get(f"/containerLogs/{NAMESPACE}/{pod}/{container_name}", params=query)


def printer_ready(node: Node) -> None:
    wait_until(
        "the printer's five lines",
        lambda: logs(node, "printer").text.count("\n") == 5,
        WAIT,
    )


def test_logs_tail_and_limit(node: Node) -> None:
    printer_ready(node)
    whole = logs(node, "printer")
    assert whole.headers["content-type"] == "text/plain"
    assert whole.text == "".join(f"line {i}\n" for i in range(1, 6))
    assert logs(node, "printer", tailLines="2").text == "line 4\nline 5\n"
    assert logs(node, "printer", tailLines="0").text == ""
    assert logs(node, "printer", limitBytes="8").text == "line 1\nl"
    assert logs(node, "printer", tailLines="2", limitBytes="3").text == "lin"


def test_logs_with_timestamps_and_since(node: Node) -> None:
    printer_ready(node)
    stamped = logs(node, "printer", timestamps="true", tailLines="1").text
    stamp, _, line = stamped.partition(" ")
    assert line == "line 5\n"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", stamp), stamp
    written = dt.datetime.fromisoformat(stamp[:26] + "+00:00")
    assert abs(dt.datetime.now(dt.UTC) - written) < dt.timedelta(minutes=5)
    later = (written + dt.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert logs(node, "printer", sinceTime=later).text == ""
    assert logs(node, "printer", sinceSeconds="3600").text.count("\n") == 5


def test_logs_follow_streams_lines_as_they_come_and_ends_with_the_run(node: Node) -> None:
    pid, log_file = running_run(node, "followed")
    write_output(log_file, "first\n")
    path = f"/containerLogs/{NAMESPACE}/web/followed"
    with node.http() as http, http.stream("GET", path, params={"follow": "true"}) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        assert next(lines) == "first"
        # Each line goes out as it is written, while the run goes on; a partial one waits.
        write_output(log_file, "second\npart")
        assert next(lines) == "second"
        write_output(log_file, "ial")
        os.kill(pid, signal.SIGKILL)
        assert list(lines) == ["partial"]


def test_logs_of_the_previous_run(node: Node) -> None:
    def restarted() -> bool:
        entry = node.entry()
        crasher = entry.container("crasher") if entry else None
        return crasher is not None and crasher.restart_count >= 1

    wait_until("the crasher's restart", restarted, WAIT)
    assert logs(node, "crasher", previous="true").text == "crash\n"
    missing = logs(node, "printer", previous="true")
    assert missing.status_code == 400
    assert missing.text == 'previous terminated container "printer" in pod "web" not found'


@pytest.mark.parametrize(
    ("pod", "container_name", "query", "status", "says"),
    [
        ("nope", "printer", {}, 404, 'pod "nope" does not exist'),
        ("web", "nope", {}, 404, 'container "nope" not found in pod "web"'),
        ("sim", "main", {}, 400, f"pod {NAMESPACE}/sim is simulated"),
        ("web", "printer", {"tailLines": "x"}, 400, "Unable to decode query"),
        ("web", "printer", {"limitBytes": "0"}, 422, "Invalid request"),
    ],
)
def test_bad_log_requests_get_kubelets_answers(
    node: Node,
    pod: str,
    container_name: str,
    query: Mapping[str, str],
    status: int,
    says: str,
) -> None:
    response = logs(node, container_name, pod=pod, **query)
    assert response.status_code == status
    assert says in response.text
    with node.http() as http:
        assert http.get("/healthz").text == "ok"


def test_the_certificate_is_self_signed_for_the_node_address(node: Node) -> None:
    with node.http() as http:
        assert http.get("/healthz").status_code == 200
    # Not from a public CA: only its own CA (or none, as kube-apiserver does) accepts it.
    with (
        httpx.Client(verify=ssl.create_default_context(), timeout=WAIT) as public,
        pytest.raises(httpx.ConnectError),
    ):
        public.get(f"{node.base}/healthz")


def command_line(process: Path) -> bytes:
    try:
        return (process / "cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:  # it ended meanwhile
        return b""


def test_a_client_that_leaves_mid_exec_takes_its_command_along(node: Node) -> None:
    marker = "sleep 32123"
    client = SpdyClient(
        node.server, exec_path("printer", "sh", "-c", marker), ["v4.channel.k8s.io"]
    )
    client.open(streamtype="error")
    stdout = client.open(streamtype="stdout")
    client.open(streamtype="stderr")
    client.wait("the streams to be accepted", lambda: client.streams[stdout].replied)

    def running() -> bool:
        return any(marker.encode() in command_line(p) for p in Path("/proc").glob("[0-9]*"))

    wait_until("the command to run", running, WAIT)
    client.close()
    wait_until("the command to be killed", lambda: not running(), WAIT)


def test_garbage_gets_a_400_and_the_server_keeps_serving(node: Node) -> None:
    raw = socket.create_connection(("127.0.0.1", node.server.port), timeout=WAIT)
    with ssl_context(node.server).wrap_socket(raw, server_hostname="127.0.0.1") as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 400 ")
    with node.http() as http:
        assert http.get("/healthz").text == "ok"
        assert http.get("/pods").status_code == 404
