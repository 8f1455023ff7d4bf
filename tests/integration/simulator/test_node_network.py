"""The node's pod network on the real host: veths into network namespaces made here (`unshare
--net`), addresses claimed by host routes so that two node agents on one machine never share one,
the blackhole safety net shared between agents, and what a crashed agent left removed by the next.

Each "node agent" is a NodeNetwork; they share the machine-wide state folder as real agents do.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from localcluster.simulator import podnet
from localcluster.simulator.runtime import runtime_available
from localcluster.simulator.sandbox import NodeNetwork, PodLink, running_node_agents
from tests.support.polling import wait_until

MISSING = runtime_available() or (None if shutil.which("ip") else "iproute2 is not installed")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))

UID = "5b0e6c55-8d3e-4a8e-9b7a-2f1d00000001"
PORT = 18080
SERVE = (
    f"import http.server as h, sys; h.test(h.SimpleHTTPRequestHandler, port={PORT}, bind='0.0.0.0')"
)


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def links() -> set[str]:
    return {link.name for link in podnet.parse_links(ip("-j", "link", "show"))}


def vcjob_routes() -> list[podnet.HostRoute]:
    return podnet.parse_routes(ip("-j", "route", "show", "proto", str(podnet.ROUTE_PROTOCOL)))


def blackholes() -> set[str]:
    return {r.destination for r in vcjob_routes() if r.kind == "blackhole"}


@contextlib.contextmanager
def namespace() -> Iterator[subprocess.Popen[bytes]]:
    """A network namespace of its own, held by a process (as the pod agent holds a pod's)."""
    holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "600"])
    try:
        wait_until(
            "the namespace",
            lambda: (
                Path(f"/proc/{holder.pid}/ns/net").resolve() != Path("/proc/self/ns/net").resolve()
            ),
            timeout=10,
        )
        yield holder
    finally:
        holder.kill()
        holder.wait(5)


@contextlib.contextmanager
def serving(holder: subprocess.Popen[bytes], tmp_path: Path, text: str) -> Iterator[None]:
    """An HTTP server on every address of the namespace, serving `text` at /index.txt."""
    folder = tmp_path / text
    folder.mkdir()
    (folder / "index.txt").write_text(text)
    server = subprocess.Popen(
        ["nsenter", f"--net=/proc/{holder.pid}/ns/net", "--", sys.executable, "-c", SERVE],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        server.kill()
        server.wait(5)


def answers(link: PodLink) -> str:
    try:
        return httpx.get(f"http://{link.address}:{PORT}/index.txt", timeout=2).text
    except httpx.HTTPError:
        return ""


@pytest.fixture
def agents() -> Iterator[tuple[NodeNetwork, NodeNetwork]]:
    first, second = NodeNetwork(), NodeNetwork()
    first.start()
    second.start()
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def test_two_agents_give_the_same_pod_uid_two_addresses_both_reachable_from_the_host(
    agents: tuple[NodeNetwork, NodeNetwork], tmp_path: Path
) -> None:
    first, second = agents
    with namespace() as one, namespace() as two:
        a = first.attach(UID, one.pid)
        # Same uid, so the same first choice of name and address: both are taken already.
        b = second.attach(UID, two.pid)
        assert a.address != b.address
        assert a.name != b.name
        assert podnet.is_real_pod_address(a.address) and podnet.is_real_pod_address(b.address)
        assert a.address == next(podnet.candidate_addresses(UID))
        with serving(one, tmp_path, "one"), serving(two, tmp_path, "two"):
            wait_until("pod one answers on its address", lambda: answers(a) == "one", 20)
            wait_until("pod two answers on its address", lambda: answers(b) == "two", 20)
        inside = subprocess.run(
            ["nsenter", f"--net=/proc/{one.pid}/ns/net", "--", "ip", "route"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "default via 10.244.0.1 dev eth0 onlink" in inside
        assert Path(podnet.forwarding_switch(a.name)).read_text().strip() == "0"
        routes = {r.destination: r for r in vcjob_routes()}
        assert routes[a.address].device == a.name and routes[b.address].device == b.name

        first.detach(a)
        assert a.name not in links() and a.address not in {r.destination for r in vcjob_routes()}
        # Released, the address is the pod's first choice again.
        again = first.attach(UID, one.pid)
        assert again.address == a.address


def test_blackholes_stay_while_any_agent_runs_and_drop_made_up_addresses(
    agents: tuple[NodeNetwork, NodeNetwork],
) -> None:
    first, second = agents
    assert blackholes() >= {"10.244.0.0/16", "10.0.0.0/24"}
    for made_up in (podnet.simulated_pod_ip(UID), "10.0.0.17"):
        assert dropped_here(made_up)
    first.close()
    first.close()  # idempotent
    assert blackholes() >= {"10.244.0.0/16", "10.0.0.0/24"}, "the other agent still runs"
    with namespace() as holder:
        link = second.attach(UID, holder.pid)
        second.close()
        assert link.name not in links()
    if running_node_agents() == 0:  # node agents of clusters in parallel keep the blackholes
        assert blackholes() == set()


def dropped_here(address: str) -> bool:
    """A connection to address fails at once on this machine: the kernel's answer for a
    blackhole route (EINVAL), before any packet is sent."""
    with socket.socket() as sock:
        sock.settimeout(5)
        try:
            sock.connect((address, 80))
        except OSError as err:
            return err.errno == errno.EINVAL
    return False


def test_the_next_agent_removes_the_interfaces_of_one_that_crashed() -> None:
    script = (
        "import sys; from localcluster.simulator.sandbox import NodeNetwork; "
        "n = NodeNetwork(); n.start(); link = n.attach(sys.argv[1], int(sys.argv[2])); "
        "print(link.name, flush=True); sys.stdin.read()"
    )
    with namespace() as holder:
        crashed = subprocess.Popen(
            [sys.executable, "-c", script, UID, str(holder.pid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert crashed.stdout is not None
        name = crashed.stdout.readline().strip()
        assert name in links()
        crashed.send_signal(signal.SIGKILL)
        crashed.wait(5)
        # The namespace outlives the agent here, so its veth does too, until the next agent.
        assert name in links()
        survivor = NodeNetwork()
        survivor.start()
        try:
            assert name not in links()
            assert all(r.device != name for r in vcjob_routes())
        finally:
            survivor.close()


def test_a_foreign_host_route_keeps_vcjob_off_its_address() -> None:
    with namespace() as holder:
        agent = NodeNetwork()
        agent.start()
        try:
            first_choice = next(podnet.candidate_addresses(UID))
            subprocess.run(["ip", "route", "add", "blackhole", f"{first_choice}/32"], check=True)
            try:
                link = agent.attach(UID, holder.pid)
                assert link.address != first_choice
            finally:
                subprocess.run(
                    ["ip", "route", "del", "blackhole", f"{first_choice}/32"], check=True
                )
        finally:
            agent.close()
