"""kubelet's streaming protocols decided without I/O: the SPDY upgrade's handshake, which streams
an exec or attach waits for and what each carries, the metav1.Status written on the error stream,
the port-forward streams' headers, and how a command runs inside a container.

The protocol versions and wordings are kubelet's (k8s.io/kubelet pkg/cri/streaming and
k8s.io/apimachinery pkg/util/httpstream): kube-apiserver and kubectl read them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from localcluster.simulator.spdy import Headers

PROTOCOL_HEADER = "X-Stream-Protocol-Version"
ACCEPTED_PROTOCOLS_HEADER = "X-Accepted-Stream-Protocol-Versions"
SPDY_UPGRADE = "SPDY/3.1"

V1 = "channel.k8s.io"
V2 = "v2.channel.k8s.io"
V3 = "v3.channel.k8s.io"
V4 = "v4.channel.k8s.io"
# Over SPDY, v5 is v4 (it adds a stdin close signal that only WebSocket streams need).
V5 = "v5.channel.k8s.io"
REMOTE_COMMAND_PROTOCOLS = (V5, V4, V3, V2, V1)
PORT_FORWARD_PROTOCOLS = ("portforward.k8s.io",)
# A kubelet waits this long for the client to open its streams.
STREAM_CREATION_TIMEOUT = 30.0

StreamType = Literal["error", "stdin", "stdout", "stderr", "resize"]
STREAM_TYPES: tuple[StreamType, ...] = ("error", "stdin", "stdout", "stderr", "resize")
ForwardStreamType = Literal["data", "error"]


class UpgradeRefusedError(Exception):
    """The upgrade is answered with `status` and a plain-text body, as kubelet's handshake does."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def client_protocols(values: Sequence[str]) -> list[str]:
    """Every protocol the client offers, over repeated and comma-separated header values."""
    return [p.strip() for value in values for p in value.split(",") if p.strip()]


def negotiate(offered: Sequence[str], supported: Sequence[str]) -> str:
    """The client's first offer the server supports (httpstream.Handshake)."""
    if not offered:
        raise UpgradeRefusedError(400, f"unable to upgrade: {PROTOCOL_HEADER} is required")
    for protocol in offered:
        if protocol in supported:
            return protocol
    raise UpgradeRefusedError(
        403,
        "unable to upgrade: unable to negotiate protocol: client supports "
        f"[{' '.join(offered)}], server accepts [{' '.join(supported)}]",
    )


def check_upgrade(connection: str, upgrade: str) -> None:
    """The request asks for SPDY/3.1 (spdy.responseUpgrader's test)."""
    if "upgrade" not in connection.lower() or SPDY_UPGRADE.lower() not in upgrade.lower():
        raise UpgradeRefusedError(400, "unable to upgrade: missing upgrade headers in request")


# -- exec and attach ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamOptions:
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def stream_options(query: Mapping[str, Sequence[str]]) -> StreamOptions:
    """kubelet's remotecommand.NewOptions: `input`, `output`, `error`, `tty`, each `1` or not."""

    def on(name: str) -> bool:
        values = query.get(name) or []
        return bool(values) and values[0] == "1"

    tty = on("tty")
    options = StreamOptions(
        stdin=on("input"), stdout=on("output"), stderr=on("error") and not tty, tty=tty
    )
    if not (options.stdin or options.stdout or options.stderr):
        raise ValueError("you must specify at least 1 of stdin, stdout, stderr")
    return options


def expected_streams(options: StreamOptions, protocol: str) -> frozenset[StreamType]:
    """The streams the client opens before anything runs; resizing came with v3."""
    wanted: set[StreamType] = {"error"}
    if options.stdin:
        wanted.add("stdin")
    if options.stdout:
        wanted.add("stdout")
    if options.stderr:
        wanted.add("stderr")
    if options.tty and protocol in (V3, V4, V5):
        wanted.add("resize")
    return frozenset(wanted)


def stream_type(headers: Headers) -> StreamType | None:
    value = (headers.get("streamtype") or [""])[0]
    return next((t for t in STREAM_TYPES if t == value), None)


class StatusCause(TypedDict):
    reason: NotRequired[str]
    message: str


class StatusDetails(TypedDict):
    causes: list[StatusCause]


class Status(TypedDict):
    """metav1.Status as Go marshals it (empty fields left out)."""

    metadata: dict[str, str]
    status: Literal["Success", "Failure"]
    message: NotRequired[str]
    reason: NotRequired[str]
    details: NotRequired[StatusDetails]
    code: NotRequired[int]


def success() -> Status:
    return {"metadata": {}, "status": "Success"}


def exit_code_status(command: Sequence[str], code: int) -> Status:
    """What kubelet writes when the command ends with a non-zero code; client-go reads the code
    from the ExitCode cause."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: error executing command "
        f"[{' '.join(command)}], exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def internal_error(message: str) -> Status:
    """apierrors.NewInternalError."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def failure(code: int, reason: str, message: str) -> Status:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


def encode_status(status: Status) -> bytes:
    return json.dumps(status, separators=(",", ":")).encode()


def error_stream_payload(protocol: str, status: Status) -> bytes:
    """v4 and later write the Status as JSON; earlier versions only a failure's message."""
    if protocol in (V4, V5):
        return encode_status(status)
    if status["status"] == "Success":
        return b""
    return status.get("message", "").encode()


def exit_code(returncode: int) -> int:
    """A process killed by signal N exits with 128+N, as container runtimes report it."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass(frozen=True)
class TerminalSize:
    width: int
    height: int


def terminal_sizes(buffer: bytes) -> tuple[list[TerminalSize], bytes]:
    """The resize stream's JSON objects (`{"Width":80,"Height":24}`, back to back), and what is
    left of a last incomplete one."""
    text = buffer.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    sizes: list[TerminalSize] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return sizes, b""
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return sizes, text[at:].encode()
        at = end
        if isinstance(value, dict):
            width, height = value.get("Width"), value.get("Height")
            if isinstance(width, int) and isinstance(height, int):
                sizes.append(TerminalSize(width, height))


def nsenter_argv(pid: int, command: Sequence[str], nsenter: str = "nsenter") -> list[str]:
    """`command` inside the container of process `pid`: its pod's network, its own mount and UTS
    namespaces, its root (launch.py chroots into a private one) and its working dir. `nsenter` is
    found on the node's PATH: the container's own PATH applies to `command` only."""
    proc = f"/proc/{pid}"
    return [
        nsenter,
        f"--net={proc}/ns/net",
        f"--mount={proc}/ns/mnt",
        f"--uts={proc}/ns/uts",
        f"--root={proc}/root",
        f"--wd={proc}/cwd",
        "--",
        *command,
    ]


def parse_environ(raw: bytes) -> dict[str, str]:
    """A process's environment as /proc/PID/environ holds it (NUL-separated NAME=VALUE)."""
    environment: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            environment[name.decode("utf-8", "surrogateescape")] = value.decode(
                "utf-8", "surrogateescape"
            )
    return environment


# -- port-forward ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ForwardStream:
    """One half of the pair of streams a port-forward connection opens per connection."""

    kind: ForwardStreamType
    port: int
    request_id: str


def forward_stream(headers: Headers, stream_id: int) -> ForwardStream:
    """Read a stream's headers (kubelet's httpStreamReceived); without a requestID, the error
    stream pairs with the data stream the client opens right after it."""

    def one(name: str) -> str:
        return (headers.get(name) or [""])[0]

    raw_port = one("port")
    if not raw_port:
        raise ValueError('"port" header is required')
    try:
        port = int(raw_port, 10)
    except ValueError:
        raise ValueError(f'unable to parse "{raw_port}" as a port') from None
    if not 0 < port < 65536:
        raise ValueError(f'port "{raw_port}" must be > 0 and < 65536')
    kind = one("streamtype")
    if not kind:
        raise ValueError('"streamType" header is required')
    if kind not in ("data", "error"):
        raise ValueError(f'invalid stream type "{kind}"')
    request_id = one("requestid") or str(stream_id if kind == "error" else stream_id - 2)
    return ForwardStream("data" if kind == "data" else "error", port, request_id)


def forward_error(port: int, pod: str, uid: str, reason: str) -> str:
    """The text written on a pair's error stream (kubectl prints it after its own prefix)."""
    return f"error forwarding port {port} to pod {pod}, uid {uid}: {reason}"


def connect_failure(port: int, sandbox: str, ipv4: str, ipv6: str) -> str:
    """containerd's wording when nothing in the pod accepts the connection."""
    return (
        f'failed to connect to localhost:{port} inside namespace "{sandbox}", '
        f"IPv4: {ipv4} IPv6 {ipv6} "
    )
