"""Pod sandboxes: a network namespace held by the pod agent (`podagent.py`) with loopback and
`eth0`, one end of a veth pair whose other end is on the node (see `podnet.py`), and the node's
side of the pod's way out: the socket through which the pod reaches the API server.

One asyncio loop on a daemon thread serves every pod's forwarding on the node; one NodeNetwork
owns what the node adds to the host's network (veths, routes, the blackhole safety net).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from localcluster.simulator import podnet
from localcluster.simulator.splice import read_port, splice

log = logging.getLogger(__name__)

AGENT_START_TIMEOUT = 10.0
IP_TIMEOUT = 10.0
# Machine-wide (every node agent on the machine shares it); /run is emptied at boot, as routes are.
NETWORK_STATE_DIR = Path("/run/vcjob/net")
LINK_NAME_ATTEMPTS = 4
# Addresses tried after those with a route are skipped: only a race with another agent fails one.
CLAIM_ATTEMPTS = 32
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


class NetworkError(RuntimeError):
    """The host refused a step of wiring a pod's network; the message carries `ip`'s words."""


@dataclass(frozen=True)
class PodLink:
    """A pod's veth: its host end's name and the pod's address."""

    name: str
    address: str


def _run(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=IP_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise NetworkError(f"{' '.join(argv)}: {err}") from err


def _check(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    if result.returncode != 0:
        command = " ".join(str(a) for a in result.args)
        raise NetworkError(f"{command}: {result.stderr.strip() or result.returncode}")
    return result


def _owner_alive(owner: podnet.Owner) -> bool:
    try:
        return podnet.process_start(Path(f"/proc/{owner.pid}/stat").read_text()) == owner.start
    except (OSError, ValueError, IndexError):
        return False


def running_node_agents(
    state_dir: Path = NETWORK_STATE_DIR, skip: Path | None = None, prune: bool = False
) -> int:
    """How many node agents hold the machine's pod network: those whose member file is locked
    (pruning the files of agents gone, under the machine lock only)."""
    members = state_dir / "members"
    alive = 0
    for path in sorted(members.iterdir()) if members.exists() else ():
        if path == skip:
            continue
        with contextlib.suppress(FileNotFoundError), path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                alive += 1
                continue
            if prune:
                path.unlink(missing_ok=True)
    return alive


class NodeNetwork:
    """What one node agent adds to the host's network, and its share of what agents share.

    Every agent holds an flock on a file of its own under `members/`, so the agents alive are
    those whose file is locked (a crashed agent's lock went with it); the blackholes are added
    by whoever finds them absent and removed by the last agent to stop. Steps that read or change
    what agents share run under `lock`, machine-wide.
    """

    def __init__(self, state_dir: Path = NETWORK_STATE_DIR) -> None:
        self.state_dir = state_dir
        stat = Path("/proc/self/stat").read_text()
        self.owner = podnet.Owner(os.getpid(), podnet.process_start(stat))
        self._member: IO[str] | None = None
        self._member_path: Path | None = None
        self._links: dict[str, PodLink] = {}
        self._guard = threading.Lock()

    @property
    def members(self) -> Path:
        return self.state_dir / "members"

    @contextlib.contextmanager
    def _machine_lock(self) -> Iterator[None]:
        with (self.state_dir / "lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield  # closing the file releases the lock

    def _other_members(self) -> int:
        """How many other agents run; the files of those gone are removed on the way."""
        return running_node_agents(self.state_dir, skip=self._member_path, prune=True)

    def start(self) -> None:
        if shutil.which("ip") is None:
            raise NetworkError("iproute2's `ip` is not installed")
        self.members.mkdir(parents=True, exist_ok=True)
        with self._machine_lock():
            others = self._other_members()
            path = self.members / f"{self.owner.pid}-{secrets.token_hex(4)}"
            member = path.open("w")
            fcntl.flock(member, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._member, self._member_path = member, path
            links = podnet.parse_links(_check(_run(["ip", "-j", "link", "show"])).stdout)
            for name in podnet.stale_links(links, _owner_alive):
                log.info("removing a pod interface a stopped node agent left", extra={"link": name})
                self._delete_link(name)
            for cidr in podnet.BLACKHOLES:
                result = _run(podnet.blackhole_command("add", str(cidr)))
                if result.returncode != 0 and not podnet.exists_error(result.stderr):
                    _check(result)
        log.info(
            "pod network ready",
            extra={"pod_range": str(podnet.POD_RANGE), "other_node_agents": others},
        )

    def attach(self, uid: str, netns_pid: int) -> PodLink:
        """Give the pod in the network namespace of netns_pid its veth and address."""
        with self._machine_lock():
            # Named and owned at once: a node agent starting meanwhile sees no ownerless link.
            name = self._create_link(uid, netns_pid)
            try:
                Path(podnet.forwarding_switch(name)).write_text("0\n")
                _check(_run(["ip", "-batch", "-"], podnet.host_link_batch(name, self.owner)))
            except (OSError, NetworkError):
                self._delete_link(name)
                raise
        try:
            address = self._claim(name, uid)
            nsenter = ["nsenter", f"--net=/proc/{netns_pid}/ns/net", "--"]
            _check(_run([*nsenter, "ip", "-batch", "-"], podnet.pod_batch(address)))
        except NetworkError:
            self._delete_link(name)
            raise
        link = PodLink(name, address)
        with self._guard:
            self._links[name] = link
        return link

    def _create_link(self, uid: str, netns_pid: int) -> str:
        for attempt in range(LINK_NAME_ATTEMPTS):
            name = podnet.link_name(uid, attempt)
            result = _run(podnet.create_link_command(name, netns_pid))
            if result.returncode == 0:
                return name
            if not podnet.exists_error(result.stderr):
                _check(result)
        raise NetworkError(f"no free interface name for pod {uid}")

    def _claim(self, name: str, uid: str) -> str:
        routes = podnet.parse_routes(_check(_run(["ip", "-j", "route", "show"])).stdout)
        candidates = podnet.candidate_addresses(uid, podnet.taken_addresses(routes))
        for _, address in zip(range(CLAIM_ATTEMPTS), candidates, strict=False):
            result = _run(podnet.claim_command(name, address))
            if result.returncode == 0:
                return address
            if not podnet.exists_error(result.stderr):
                _check(result)
        raise NetworkError(f"no free pod address in {podnet.POD_RANGE}")

    def _delete_link(self, name: str) -> None:
        """Deleting one end deletes the pair, and the routes through it."""
        try:
            result = _run(podnet.delete_link_command(name))
        except NetworkError as err:
            log.warning("pod interface not removed", extra={"link": name, "error": str(err)})
            return
        if result.returncode != 0 and not podnet.gone_error(result.stderr):
            log.warning("pod interface not removed", extra={"link": name, "error": result.stderr})

    def detach(self, link: PodLink) -> None:
        with self._guard:
            self._links.pop(link.name, None)
        self._delete_link(link.name)

    def close(self) -> None:
        """Remove this agent's interfaces, and the blackholes when no other agent runs."""
        with self._guard:
            member, links = self._member, list(self._links.values())
            self._member = None
        if member is None:
            return
        for link in links:
            self.detach(link)
        with self._machine_lock():
            if self._member_path is not None:
                self._member_path.unlink(missing_ok=True)
            member.close()
            self._member_path = None
            last = self._other_members() == 0
            if last:
                for cidr in podnet.BLACKHOLES:
                    result = _run(podnet.blackhole_command("del", str(cidr)))
                    if result.returncode != 0 and not podnet.gone_error(result.stderr):
                        log.warning(
                            "blackhole route not removed",
                            extra={"range": str(cidr), "error": result.stderr},
                        )
                with contextlib.suppress(OSError):
                    self.members.rmdir()
        if last:
            self._remove_state_dir()
        log.info("pod network removed")

    def _remove_state_dir(self) -> None:
        """The last agent leaves nothing in /run; one starting meanwhile has made `members`
        again and keeps the lock file."""
        if self.members.exists():
            return
        (self.state_dir / "lock").unlink(missing_ok=True)
        for folder in (self.state_dir, self.state_dir.parent):
            with contextlib.suppress(OSError):
                folder.rmdir()


class Forwarder:
    """The node's end of every sandbox's forwarding, and the node's pod network."""

    def __init__(self, network: NodeNetwork | None = None) -> None:
        self.network = network if network is not None else NodeNetwork()
        self.network.start()
        # Also on a plain interpreter exit: the host keeps nothing of a node agent that stopped.
        atexit.register(self.shutdown)
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

    def close(self, servers: Iterable[asyncio.AbstractServer]) -> None:
        for server in servers:
            self._loop.call_soon_threadsafe(server.close)

    def shutdown(self) -> None:
        """Remove what the node added to the host's network (idempotent)."""
        self.network.close()


class Sandbox:
    """One pod's network namespace, its veth and address, and its way out."""

    def __init__(self, forwarder: Forwarder, pod_dir: Path, uid: str, outbound: set[int]) -> None:
        self.forwarder = forwarder
        self.pod_dir = pod_dir
        self.uid = uid
        self.outbound = outbound
        # Unix socket paths are short (108 bytes): they live in a short private folder.
        self._sockets = Path(tempfile.mkdtemp(prefix="vcjob-pod-"))
        self.in_socket = str(self._sockets / "in")
        self.out_socket = str(self._sockets / "out")
        self._servers: list[asyncio.AbstractServer] = []
        self.agent: subprocess.Popen[bytes] | None = None
        self.link: PodLink | None = None

    @property
    def netns(self) -> str:
        if self.agent is None:
            raise RuntimeError("the sandbox is not running")
        return f"/proc/{self.agent.pid}/ns/net"

    @property
    def pod_ip(self) -> str:
        if self.link is None:
            raise RuntimeError("the sandbox has no address yet")
        return self.link.address

    def start(self) -> str:
        """Start the pod agent and wire its namespace; the pod's address."""
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
        # The agent's pid is its namespace's: the shim and unshare exec, they do not fork.
        self.link = self.forwarder.network.attach(self.uid, self.agent.pid)
        return self.link.address

    def stop(self) -> None:
        self.forwarder.close(self._servers)
        self._servers.clear()
        if self.link is not None:
            # Before the namespace goes (the kernel frees it later): the address is free at once.
            self.forwarder.network.detach(self.link)
        if self.agent is not None and self.agent.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.agent.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.agent.wait(5)
        for entry in self._sockets.iterdir() if self._sockets.exists() else ():
            entry.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self._sockets.rmdir()
