"""Streaming protocol decisions: the SPDY upgrade's handshake, which streams exec and attach wait
for, the metav1.Status on the error stream, terminal resizes, and port-forward stream headers."""

from __future__ import annotations

import json

import pytest

from localcluster.simulator import remotecommand as rc
from localcluster.simulator.remotecommand import StreamOptions, UpgradeRefusedError


def test_offers_are_read_over_repeated_and_comma_separated_headers() -> None:
    assert rc.client_protocols([f"{rc.V5}, {rc.V4}", rc.V1, " "]) == [rc.V5, rc.V4, rc.V1]


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        ([rc.V5, rc.V4, rc.V3], rc.V5),
        ([rc.V4, rc.V5], rc.V4),  # the client's order decides
        (["v9.channel.k8s.io", rc.V2], rc.V2),
    ],
)
def test_the_clients_first_supported_offer_wins(offered: list[str], chosen: str) -> None:
    assert rc.negotiate(offered, rc.REMOTE_COMMAND_PROTOCOLS) == chosen


@pytest.mark.parametrize(
    ("offered", "status", "message"),
    [
        ([], 400, "unable to upgrade: X-Stream-Protocol-Version is required"),
        (
            ["v9.channel.k8s.io"],
            403,
            "unable to upgrade: unable to negotiate protocol: client supports "
            "[v9.channel.k8s.io], server accepts [portforward.k8s.io]",
        ),
    ],
)
def test_no_protocol_in_common_is_refused(offered: list[str], status: int, message: str) -> None:
    with pytest.raises(UpgradeRefusedError) as caught:
        rc.negotiate(offered, rc.PORT_FORWARD_PROTOCOLS)
    assert (caught.value.status, caught.value.message) == (status, message)


@pytest.mark.parametrize(
    ("connection", "upgrade", "accepted"),
    [
        ("Upgrade", "SPDY/3.1", True),
        ("keep-alive, upgrade", "spdy/3.1", True),
        ("keep-alive", "SPDY/3.1", False),
        ("Upgrade", "websocket", False),
    ],
)
def test_only_spdy_upgrades_are_taken(connection: str, upgrade: str, accepted: bool) -> None:
    if accepted:
        rc.check_upgrade(connection, upgrade)
    else:
        with pytest.raises(UpgradeRefusedError, match="missing upgrade headers"):
            rc.check_upgrade(connection, upgrade)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"output": ["1"], "error": ["1"]}, StreamOptions(False, True, True, False)),
        ({"input": ["1"], "output": ["true"]}, StreamOptions(True, False, False, False)),
        # A terminal has no separate stderr.
        (
            {"input": ["1"], "output": ["1"], "error": ["1"], "tty": ["1"]},
            StreamOptions(True, True, False, True),
        ),
    ],
)
def test_stream_options_read_kubelets_query(
    query: dict[str, list[str]], expected: StreamOptions
) -> None:
    assert rc.stream_options(query) == expected


def test_a_request_without_any_stream_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 of stdin, stdout, stderr"):
        rc.stream_options({"tty": ["1"], "error": ["1"]})


@pytest.mark.parametrize(
    ("options", "protocol", "expected"),
    [
        (StreamOptions(False, True, True, False), rc.V4, {"error", "stdout", "stderr"}),
        (StreamOptions(True, True, False, True), rc.V4, {"error", "stdin", "stdout", "resize"}),
        (StreamOptions(True, True, False, True), rc.V5, {"error", "stdin", "stdout", "resize"}),
        (StreamOptions(True, True, False, True), rc.V2, {"error", "stdin", "stdout"}),
    ],
)
def test_expected_streams_follow_options_and_version(
    options: StreamOptions, protocol: str, expected: set[str]
) -> None:
    assert rc.expected_streams(options, protocol) == expected


def test_stream_types_come_from_the_streamtype_header() -> None:
    assert rc.stream_type({"streamtype": ["stdout"]}) == "stdout"
    assert rc.stream_type({"streamtype": ["data"]}) is None
    assert rc.stream_type({}) is None


def test_statuses_marshal_as_go_does() -> None:
    assert rc.encode_status(rc.success()) == b'{"metadata":{},"status":"Success"}'
    failed = json.loads(rc.encode_status(rc.exit_code_status(["sh", "-c", "exit 3"], 3)))
    assert failed == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: error executing command "
        "[sh -c exit 3], exit code 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }
    assert rc.internal_error("boom")["message"] == "Internal error occurred: boom"
    assert rc.internal_error("boom")["code"] == 500


@pytest.mark.parametrize(
    ("protocol", "status", "payload"),
    [
        (rc.V5, rc.success(), b'{"metadata":{},"status":"Success"}'),
        (rc.V4, rc.success(), b'{"metadata":{},"status":"Success"}'),
        (rc.V3, rc.success(), b""),
        (rc.V1, rc.failure(500, "InternalError", "it broke"), b"it broke"),
    ],
)
def test_the_error_stream_carries_json_from_v4_on(
    protocol: str, status: rc.Status, payload: bytes
) -> None:
    assert rc.error_stream_payload(protocol, status) == payload


@pytest.mark.parametrize(("returncode", "code"), [(0, 0), (3, 3), (-9, 137), (-15, 143)])
def test_exit_codes_of_killed_commands_are_128_plus_the_signal(returncode: int, code: int) -> None:
    assert rc.exit_code(returncode) == code


def test_resize_messages_are_read_across_chunks() -> None:
    sizes, rest = rc.terminal_sizes(b'{"Width":80,"Height":24} {"Width":100,"He')
    assert sizes == [rc.TerminalSize(80, 24)]
    sizes, rest = rc.terminal_sizes(rest + b'ight":30}\n')
    assert (sizes, rest) == ([rc.TerminalSize(100, 30)], b"")
    assert rc.terminal_sizes(b'{"Width":"wide"}') == ([], b"")


def test_commands_enter_the_containers_namespaces_and_root() -> None:
    assert rc.nsenter_argv(42, ["sh", "-c", "id"], "/usr/bin/nsenter") == [
        "/usr/bin/nsenter",
        "--net=/proc/42/ns/net",
        "--mount=/proc/42/ns/mnt",
        "--uts=/proc/42/ns/uts",
        "--root=/proc/42/root",
        "--wd=/proc/42/cwd",
        "--",
        "sh",
        "-c",
        "id",
    ]


def test_the_environment_is_read_from_proc_environ() -> None:
    raw = b"PATH=/usr/bin\0GREETING=a=b\0EMPTY=\0broken\0"
    assert rc.parse_environ(raw) == {"PATH": "/usr/bin", "GREETING": "a=b", "EMPTY": ""}


@pytest.mark.parametrize(
    ("headers", "stream_id", "expected"),
    [
        (
            {"streamtype": ["data"], "port": ["8080"], "requestid": ["7"]},
            3,
            rc.ForwardStream("data", 8080, "7"),
        ),
        # Without requestID, kubelet pairs the error stream (id N) with the data stream (N+2).
        ({"streamtype": ["error"], "port": ["80"]}, 5, rc.ForwardStream("error", 80, "5")),
        ({"streamtype": ["data"], "port": ["80"]}, 7, rc.ForwardStream("data", 80, "5")),
    ],
)
def test_port_forward_streams_pair_by_request_id(
    headers: dict[str, list[str]], stream_id: int, expected: rc.ForwardStream
) -> None:
    assert rc.forward_stream(headers, stream_id) == expected


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"streamtype": ["data"]}, '"port" header is required'),
        ({"streamtype": ["data"], "port": ["http"]}, 'unable to parse "http" as a port'),
        ({"streamtype": ["data"], "port": ["0"]}, 'port "0" must be > 0'),
        ({"port": ["80"]}, '"streamType" header is required'),
        ({"streamtype": ["stdout"], "port": ["80"]}, 'invalid stream type "stdout"'),
    ],
)
def test_bad_port_forward_streams_are_refused(headers: dict[str, list[str]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rc.forward_stream(headers, 1)


def test_port_forward_errors_read_as_kubelets() -> None:
    reason = rc.connect_failure(9, "ns/web", "dial tcp4 127.0.0.1:9: connect: refused", "x")
    assert rc.forward_error(9, "ns/web", "u1", reason) == (
        "error forwarding port 9 to pod ns/web, uid u1: failed to connect to localhost:9 inside "
        'namespace "ns/web", IPv4: dial tcp4 127.0.0.1:9: connect: refused IPv6 x '
    )
