"""Probes of flow dependencies: which addresses may be probed, and real HTTP and TCP probes
against servers on loopback."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from controller.jobflow.decide.probes import NetworkProbe
from controller.jobflow.shell.probes import refusal, run_probe

ADDRESSES = {
    "loopback": ("127.0.0.1", False, None),
    "loopback elsewhere in 127/8": ("127.3.4.5", False, None),
    "IPv6 loopback": ("::1", False, None),
    "host-network loopback": ("127.0.0.1", True, None),
    "pod address": ("10.244.1.7", False, None),
    "host-network pod": ("10.0.0.4", True, "host-network"),
    "link-local metadata service": ("169.254.169.254", False, "not a pod address"),
    "unspecified": ("0.0.0.0", False, "not a pod address"),  # noqa: S104 (refused, not bound)
    "multicast": ("224.0.0.1", False, "not a pod address"),
    "IPv4-mapped link-local": ("::ffff:169.254.169.254", False, "not a pod address"),
    "not an address": ("example.com", False, "not an IP address"),
}


@pytest.mark.parametrize(
    ("address", "host_network", "why"), ADDRESSES.values(), ids=ADDRESSES.keys()
)
def test_only_loopback_and_pod_addresses_are_probed(
    address: str, host_network: bool, why: str | None
) -> None:
    reason = refusal(address, host_network)
    if why is None:
        assert reason is None
    else:
        assert reason is not None and why in reason


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        ok = self.path == "/ready" and self.headers.get("X-Probe") == "yes"
        self.send_response(200 if ok else 503)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


JOB = {"spec": {"tasks": [{"name": "web", "replicas": 2}]}}


def pods(*entries: tuple[str, str, bool]) -> list[dict[str, Any]]:
    return [
        {
            "metadata": {"labels": {"volcano.sh/task-spec": "web"}},
            "spec": {"hostNetwork": host},
            "status": {"phase": phase, "podIP": ip},
        }
        for ip, phase, host in entries
    ]


def test_http_probe_passes_when_every_replica_answers(server: int) -> None:
    probe = NetworkProbe("b", "f-a", "web", server, path="/ready", header=("X-Probe", "yes"))
    running = pods(("127.0.0.1", "Running", False), ("127.0.0.1", "Running", False))
    assert run_probe(probe, JOB, running).passed


def test_http_probe_fails_on_an_error_status(server: int) -> None:
    probe = NetworkProbe("b", "f-a", "web", server, path="/ready")
    outcome = run_probe(
        probe, JOB, pods(("127.0.0.1", "Running", False), ("127.0.0.1", "Running", False))
    )
    assert not outcome.passed and "answered 503" in outcome.detail


def test_probe_waits_for_every_replica_to_run(server: int) -> None:
    probe = NetworkProbe("b", "f-a", "web", server, path="/ready", header=("X-Probe", "yes"))
    outcome = run_probe(probe, JOB, pods(("127.0.0.1", "Running", False), ("", "Pending", False)))
    assert not outcome.passed and "1 of 2 pods running" in outcome.detail


def test_tcp_probe(server: int) -> None:
    both = pods(("127.0.0.1", "Running", False), ("127.0.0.1", "Running", False))
    assert run_probe(NetworkProbe("b", "f-a", "web", server), JOB, both).passed
    closed = run_probe(NetworkProbe("b", "f-a", "web", free_port()), JOB, both)
    assert not closed.passed and "TCP 127.0.0.1:" in closed.detail


def test_a_refused_address_is_never_contacted() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        # A host-network pod's address is its node's: not probed (the listener sees nobody).
        outcome = run_probe(
            NetworkProbe("b", "f-a", "web", port),
            JOB,
            pods(("10.9.8.7", "Running", True), ("10.9.8.7", "Running", True)),
        )
        assert not outcome.passed and "not probed" in outcome.detail
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_unknown_task_fails_the_probe() -> None:
    outcome = run_probe(NetworkProbe("b", "f-a", "nope", 80), JOB, [])
    assert not outcome.passed and "has no task nope" in outcome.detail
