"""Pod addresses and the host side of pod networking (pure): which address a pod gets, what its
interfaces are called, and the `ip` commands that wire them.

A pod that really runs gets a veth pair: `eth0` in its network namespace with an address from
10.244.0.0/16 (/32), the other end on the host (`vcj…`) carrying the gateway 10.244.0.1/32, a
host route `ADDRESS/32 dev vcj… src 10.244.0.1`, and in the pod a route to the gateway and a
default route through it. The host reaches every pod directly; replies stay inside 10.244/16.

Addresses: real pods take 10.244.1.1 to 10.244.127.254, simulated pods 10.244.128.0/17 (made up,
routed nowhere), so the two never meet. A real pod's first candidate comes from its uid (stable
while free) and the claim is the host route itself: the kernel refuses a second route to the same
/32 whatever its device, so two node agents on one machine cannot take the same address, and the
claim vanishes with the interface, so a crashed agent leaks none.

Safety net: while a node agent runs, `blackhole` routes for the pod and Service ranges drop
traffic to a made-up pod address or a ClusterIP on the machine instead of sending it out. Every
route vcjob adds carries protocol ROUTE_PROTOCOL, so it is told apart from anyone else's.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypedDict

POD_RANGE = ipaddress.IPv4Network("10.244.0.0/16")
SERVICE_RANGE = ipaddress.IPv4Network("10.0.0.0/24")  # controlplane.SERVICE_CLUSTER_IP_RANGE
BLACKHOLES = (POD_RANGE, SERVICE_RANGE)
GATEWAY = ipaddress.IPv4Address("10.244.0.1")
# Real pods: third octet 1..127 (10.244.0.0/24 holds the gateway), fourth 1..254.
REAL_FIRST_BLOCK = 1
REAL_BLOCKS = 127
HOSTS_PER_BLOCK = 254
POOL_SIZE = REAL_BLOCKS * HOSTS_PER_BLOCK
SIMULATED_FIRST_BLOCK = 128
SIMULATED_BLOCKS = 128

# An unassigned routing protocol number (rtnetlink's RTPROT_*, 0-255) marking vcjob's routes.
ROUTE_PROTOCOL = 118
LINK_PREFIX = "vcj"
LINK_NAME_MAX = 15  # IFNAMSIZ - 1
POD_INTERFACE = "eth0"
OWNER_ALIAS = re.compile(r"^vcjob:pid=(\d+):start=(\d+)$")


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


# -- addresses ------------------------------------------------------------------------------------


def nth_address(index: int) -> str:
    """The index-th address of the real pods' pool (0 ≤ index < POOL_SIZE)."""
    if not 0 <= index < POOL_SIZE:
        raise ValueError(f"address index {index} is outside the pool of {POOL_SIZE}")
    block, host = divmod(index, HOSTS_PER_BLOCK)
    return f"10.244.{REAL_FIRST_BLOCK + block}.{host + 1}"


def is_real_pod_address(address: str) -> bool:
    try:
        parsed = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    block, host = parsed.packed[2], parsed.packed[3]
    return (
        parsed in POD_RANGE
        and REAL_FIRST_BLOCK <= block < REAL_FIRST_BLOCK + REAL_BLOCKS
        and 1 <= host <= HOSTS_PER_BLOCK
    )


def candidate_addresses(uid: str, taken: Iterable[str] = ()) -> Iterator[str]:
    """Every free address of the pool, starting from the uid's own and wrapping around."""
    skip = set(taken)
    start = int.from_bytes(_digest(uid)[:4], "big") % POOL_SIZE
    for step in range(POOL_SIZE):
        address = nth_address((start + step) % POOL_SIZE)
        if address not in skip:
            yield address


def simulated_pod_ip(uid: str) -> str:
    """A simulated pod's made-up address: stable per uid, in 10.244.128.0/17 where no real pod
    is, so nothing answers it (the blackhole drops it)."""
    digest = _digest(uid)
    block = SIMULATED_FIRST_BLOCK + digest[0] % SIMULATED_BLOCKS
    return f"10.244.{block}.{digest[1] % HOSTS_PER_BLOCK + 1}"


# -- interfaces -----------------------------------------------------------------------------------


def link_name(uid: str, attempt: int = 0) -> str:
    """The host end of a pod's veth: `vcj` + 12 hex digits of the uid (another on each attempt,
    should a name be taken)."""
    suffix = hashlib.sha256(f"{uid}#{attempt}".encode()).hexdigest()
    return (LINK_PREFIX + suffix)[:LINK_NAME_MAX]


@dataclass(frozen=True)
class Owner:
    """The node agent process that made an interface: pid and start time (clock ticks since
    boot), so that a reused pid does not pass for the agent."""

    pid: int
    start: int


def owner_alias(owner: Owner) -> str:
    return f"vcjob:pid={owner.pid}:start={owner.start}"


def parse_owner(alias: str) -> Owner | None:
    match = OWNER_ALIAS.match(alias)
    return Owner(int(match[1]), int(match[2])) if match else None


def process_start(stat: str) -> int:
    """Field 22 (starttime) of /proc/PID/stat; the command name (field 2) may hold spaces and
    parentheses, so fields are counted after its closing one."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])


@dataclass(frozen=True)
class HostLink:
    name: str
    alias: str


class _LinkJson(TypedDict, total=False):
    ifname: str
    ifalias: str


def parse_links(text: str) -> list[HostLink]:
    """`ip -j link show` → the host's interfaces."""
    rows: list[_LinkJson] = json.loads(text or "[]")
    return [HostLink(str(row.get("ifname", "")), str(row.get("ifalias", ""))) for row in rows]


def stale_links(links: Iterable[HostLink], alive: Callable[[Owner], bool]) -> list[str]:
    """vcjob's interfaces whose node agent is gone (or that name none)."""
    stale = []
    for link in links:
        if not link.name.startswith(LINK_PREFIX):
            continue
        owner = parse_owner(link.alias)
        if owner is None or not alive(owner):
            stale.append(link.name)
    return stale


# -- routes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostRoute:
    destination: str  # "10.244.3.4" for a /32, "10.244.0.0/16", "default"
    kind: str  # "unicast", "blackhole", …
    device: str
    protocol: str


class _RouteJson(TypedDict, total=False):
    dst: str
    type: str
    dev: str
    protocol: str


def parse_routes(text: str) -> list[HostRoute]:
    """`ip -j route show` → the host's routes."""
    rows: list[_RouteJson] = json.loads(text or "[]")
    return [
        HostRoute(
            destination=str(row.get("dst", "")),
            kind=str(row.get("type", "unicast")),
            device=str(row.get("dev", "")),
            protocol=str(row.get("protocol", "")),
        )
        for row in rows
    ]


def taken_addresses(routes: Iterable[HostRoute]) -> set[str]:
    """The pool's addresses that already have a host route (any agent's, or anyone's)."""
    taken = set()
    for route in routes:
        address = route.destination.removesuffix("/32")
        if is_real_pod_address(address):
            taken.add(address)
    return taken


# -- commands -------------------------------------------------------------------------------------


def create_link_command(name: str, netns_pid: int) -> list[str]:
    """The veth pair, its pod end created right inside the pod's namespace as eth0."""
    return [
        "ip", "link", "add", name, "type", "veth",
        "peer", "name", POD_INTERFACE, "netns", str(netns_pid),
    ]  # fmt: skip


def host_link_batch(name: str, owner: Owner) -> str:
    """`ip -batch -` input that names the owner and raises the host end with the gateway."""
    return (
        f"link set dev {name} alias {owner_alias(owner)}\n"
        f"address add {GATEWAY}/32 dev {name}\n"
        f"link set dev {name} up\n"
    )


def forwarding_switch(name: str) -> str:
    """The sysctl that stops the host from forwarding what the pod sends past the host (set to
    0): a pod reaches the host and nothing else, whatever the machine's ip_forward says."""
    return f"/proc/sys/net/ipv4/conf/{name}/forwarding"


def claim_command(name: str, address: str) -> list[str]:
    """The host route to the pod; it fails with "File exists" when the address is taken."""
    return [
        "ip", "route", "add", f"{address}/32", "dev", name,
        "src", str(GATEWAY), "proto", str(ROUTE_PROTOCOL),
    ]  # fmt: skip


def pod_batch(address: str) -> str:
    """`ip -batch -` input run inside the pod's namespace (loopback is already up)."""
    return (
        f"address add {address}/32 dev {POD_INTERFACE}\n"
        f"link set dev {POD_INTERFACE} up\n"
        f"route add {GATEWAY}/32 dev {POD_INTERFACE} scope link\n"
        f"route add default via {GATEWAY} dev {POD_INTERFACE} onlink\n"
    )


def delete_link_command(name: str) -> list[str]:
    return ["ip", "link", "del", "dev", name]


def blackhole_command(verb: str, cidr: str) -> list[str]:
    """`add` or `del` of vcjob's blackhole for cidr (`del` with the protocol touches no one
    else's route)."""
    return ["ip", "route", verb, "blackhole", cidr, "proto", str(ROUTE_PROTOCOL)]


def exists_error(stderr: str) -> bool:
    """What `ip` prints when a link or route with that key is already there (EEXIST)."""
    return "File exists" in stderr


def gone_error(stderr: str) -> bool:
    """What `ip` prints when deleting a link or route that is not there (ENODEV/ESRCH)."""
    return "Cannot find device" in stderr or "No such process" in stderr
