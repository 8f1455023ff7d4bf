"""Pod sandboxes: a network namespace with loopback only, held by the pod agent
(`podagent.py`), and the node's side of its forwarding: listeners on the pod's loopback address
that reach the pod's ports, and the socket through which the pod reaches the API server.

One asyncio loop on a daemon thread serves every pod's forwarding on the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from localcluster.simulator.splice import read_port, splice

log = logging.getLogger(__name__)

AGENT_START_TIMEOUT = 10.0
# Linux's PR_SET_PDEATHSIG (kept across exec): a pod's processes die with the kubelet thread that
# started them, so a simulator that crashes leaves none behind.
_DEATH_SIGNAL_SHIM = (
    "import ctypes, os, signal, sys; ctypes.CDLL(None).prctl(1, signal.SIGKILL); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def dies_with_node(argv: list[str]) -> list[str]:
    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-c", _DEATH_SIGNAL_SHIM, *argv]


class Forwarder:
    """The node's end of every sandbox's forwarding."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="forwarder", daemon=True
        )
        self._thread.start()

    def _run(self, coroutine: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout=10)

    def outbound(self, path: str, allowed: set[int]) -> asyncio.AbstractServer:
        """Serve the pod's way out: `PORT\\n` then bytes, to 127.0.0.1:PORT on the node."""

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                port = await read_port(reader)
                if port not in allowed:
                    raise ValueError(f"port {port} is not reachable from pods")
                target = await asyncio.open_connection("127.0.0.1", port)
            except (OSError, ValueError, TimeoutError):
                writer.close()
                return
            await splice((reader, writer), target)

        server: asyncio.AbstractServer = self._run(asyncio.start_unix_server(handle, path))
        return server

    def expose(self, address: str, port: int, in_socket: str) -> asyncio.AbstractServer:
        """Listen on address:port on the node; each connection reaches 127.0.0.1:port in the pod."""

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                target = await asyncio.open_unix_connection(in_socket)
            except OSError:
                writer.close()
                return
            target[1].write(f"{port}\n".encode())
            await splice((reader, writer), target)

        server: asyncio.AbstractServer = self._run(asyncio.start_server(handle, address, port))
        return server

    def close(self, servers: Iterable[asyncio.AbstractServer]) -> None:
        for server in servers:
            self._loop.call_soon_threadsafe(server.close)


class Sandbox:
    """One pod's network namespace and its forwarding."""

    def __init__(
        self, forwarder: Forwarder, pod_dir: Path, pod_ip: str, outbound: set[int]
    ) -> None:
        self.forwarder = forwarder
        self.pod_dir = pod_dir
        self.pod_ip = pod_ip
        self.outbound = outbound
        # Unix socket paths are short (108 bytes): they live in a short private folder.
        self._sockets = Path(tempfile.mkdtemp(prefix="vcjob-pod-"))
        self.in_socket = str(self._sockets / "in")
        self.out_socket = str(self._sockets / "out")
        self._servers: list[asyncio.AbstractServer] = []
        self._exposed: set[int] = set()
        self.agent: subprocess.Popen[bytes] | None = None

    @property
    def netns(self) -> str:
        if self.agent is None:
            raise RuntimeError("the sandbox is not running")
        return f"/proc/{self.agent.pid}/ns/net"

    def start(self) -> None:
        self._servers.append(self.forwarder.outbound(self.out_socket, self.outbound))
        ready = self._sockets / "ready"
        argv = [
            "unshare", "--net", "--",
            sys.executable, "-m", "localcluster.simulator.podagent",
            "--in", self.in_socket, "--out", self.out_socket, "--ready", str(ready),
        ]  # fmt: skip
        for port in sorted(self.outbound):
            argv += ["--outbound", str(port)]
        log_file = self.pod_dir / "sandbox.log"
        with log_file.open("ab") as output:
            self.agent = subprocess.Popen(
                dies_with_node(argv),
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + AGENT_START_TIMEOUT
        while not ready.exists():
            if self.agent.poll() is not None:
                raise RuntimeError(f"the pod sandbox exited: {log_file.read_text()[-500:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("the pod sandbox did not start in time")
            time.sleep(0.05)

    def expose(self, ports: Iterable[int]) -> None:
        for port in sorted(set(ports) - self._exposed):
            try:
                self._servers.append(self.forwarder.expose(self.pod_ip, port, self.in_socket))
            except OSError as err:
                log.warning(
                    "pod port not reachable from the node",
                    extra={"ip": self.pod_ip, "port": port, "error": str(err)},
                )
                continue
            self._exposed.add(port)

    def stop(self) -> None:
        self.forwarder.close(self._servers)
        self._servers.clear()
        if self.agent is not None and self.agent.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.agent.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.agent.wait(5)
        for entry in self._sockets.iterdir() if self._sockets.exists() else ():
            entry.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self._sockets.rmdir()
