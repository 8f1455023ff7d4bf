"""Pod addresses on a bare local cluster (`--run-image python=python`): pods that really run get
a 10.244 address of their own on a veth, listed in their Service's EndpointSlices and reached
directly by the host and by kube-apiserver; a simulated pod's made-up address and a ClusterIP are
dropped on this machine; nothing the node agent added to the host outlives the cluster."""

from __future__ import annotations

import errno
import functools
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from localcluster.running import LocalCluster, running_cluster
from localcluster.simulator import podnet
from localcluster.simulator.runtime import runtime_available
from localcluster.simulator.sandbox import NETWORK_STATE_DIR, running_node_agents
from tests.support import polling

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(runtime_available() is not None, reason=str(runtime_available())),
]

WAIT = 60.0
EXTRA = ["--bare", "--run-image", "python=python"]

SERVER = """
import http.server, os
name = os.environ["POD_NAME"].encode()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(name)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("", 8080), Handler).serve_forever()
"""

wait_for = functools.partial(polling.wait_until, timeout=WAIT)


def pod(name: str, image: str = "python:3", labels: dict[str, str] | None = None) -> str:
    container: dict[str, Any] = {
        "name": "main",
        "image": image,
        "command": ["python", "-c", SERVER],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 1},
    }
    document = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 1},
    }
    return yaml.safe_dump(document)


def get(cluster: LocalCluster, *args: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(cluster.kubectl("get", "-o", "json", *args).stdout)
    return document


def pod_ip(cluster: LocalCluster, name: str) -> str:
    return str(get(cluster, "pod", name).get("status", {}).get("podIP") or "")


def ready(cluster: LocalCluster, name: str) -> bool:
    conditions = get(cluster, "pod", name).get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def links_of(agent_pid: int) -> dict[str, str]:
    """The host's vcj interfaces made by the node agent of that pid: name → alias."""
    return {
        link.name: link.alias
        for link in podnet.parse_links(ip("-j", "link", "show"))
        if (owner := podnet.parse_owner(link.alias)) is not None and owner.pid == agent_pid
    }


def vcjob_routes() -> list[podnet.HostRoute]:
    return podnet.parse_routes(ip("-j", "route", "show", "proto", str(podnet.ROUTE_PROTOCOL)))


def refused_here(address: str, port: int) -> bool:
    """A connection fails at once on this machine: the kernel's answer for a blackhole route
    (EINVAL), before any packet leaves."""
    with socket.socket() as sock:
        sock.settimeout(5)
        try:
            sock.connect((address, port))
        except OSError as err:
            return err.errno == errno.EINVAL
    return False


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("network"), webhook=False, extra_args=EXTRA
    ) as local:
        yield local


def test_two_pods_on_one_port_get_their_own_addresses_in_the_services_endpointslices(
    cluster: LocalCluster,
) -> None:
    for name in ("web-a", "web-b"):
        cluster.kubectl("create", "-f", "-", input=pod(name, labels={"app": "web"}))
    cluster.kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")  # selects app=web
    for name in ("web-a", "web-b"):
        wait_for(f"{name} ready (probed on its address)", functools.partial(ready, cluster, name))
    addresses = {name: pod_ip(cluster, name) for name in ("web-a", "web-b")}
    assert len(set(addresses.values())) == 2
    assert all(podnet.is_real_pod_address(a) for a in addresses.values()), addresses
    for name, address in addresses.items():
        assert httpx.get(f"http://{address}:8080/", timeout=5).text == name
        status = get(cluster, "pod", name)["status"]
        assert status["podIPs"] == [{"ip": address}]

    def sliced() -> list[str]:
        slices = get(cluster, "endpointslices", "-l", "kubernetes.io/service-name=web")
        return sorted(
            address
            for item in slices["items"]
            for endpoint in item.get("endpoints") or []
            if (endpoint.get("conditions") or {}).get("ready")
            for address in endpoint["addresses"]
        )

    def endpoints() -> list[str]:
        subsets = get(cluster, "endpoints", "web").get("subsets") or []
        return sorted(a["ip"] for s in subsets for a in s.get("addresses") or [])

    wait_for(
        "both pods ready in the EndpointSlices", lambda: sliced() == sorted(addresses.values())
    )
    # kube-apiserver 1.34's Service proxy reads the Endpoints, which their own controller fills
    # a moment apart from the EndpointSlices.
    wait_for(
        "both pods ready in the Service's Endpoints",
        lambda: endpoints() == sorted(addresses.values()),
    )
    # kube-apiserver itself reaches the pods: its proxy goes to a pod's address, and to the
    # Service's endpoints (it routes to endpoints, not to the ClusterIP).
    proxied = cluster.kubectl("get", "--raw", "/api/v1/namespaces/default/pods/web-a:8080/proxy/")
    assert proxied.stdout == "web-a"
    through_service = {
        cluster.kubectl("get", "--raw", "/api/v1/namespaces/default/services/web:80/proxy/").stdout
        for _ in range(12)
    }
    assert through_service <= {"web-a", "web-b"} and through_service


def test_made_up_addresses_and_cluster_ips_are_dropped_on_this_machine(
    cluster: LocalCluster,
) -> None:
    cluster.kubectl("create", "-f", "-", input=pod("simulated", image="nginx:1.27"))
    wait_for("the simulated pod's address", lambda: bool(pod_ip(cluster, "simulated")))
    made_up = pod_ip(cluster, "simulated")
    assert podnet.is_real_pod_address(made_up) is False and made_up.startswith("10.244.")
    blackholes = {r.destination for r in vcjob_routes() if r.kind == "blackhole"}
    assert blackholes >= {"10.244.0.0/16", "10.0.0.0/24"}
    assert refused_here(made_up, 8080)
    cluster.kubectl("create", "service", "clusterip", "nowhere", "--tcp=80:8080")
    cluster_ip = str(get(cluster, "service", "nowhere")["spec"]["clusterIP"])
    assert cluster_ip.startswith("10.0.0.")
    assert refused_here(cluster_ip, 80)


def test_nothing_the_node_agent_added_remains_after_the_cluster_stops(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "cluster", webhook=False, extra_args=EXTRA) as local:
        local.kubectl("create", "-f", "-", input=pod("lone"))
        wait_for("lone ready", functools.partial(ready, local, "lone"))
        address = pod_ip(local, "lone")
        agent = local.component_pids()["simulator"]
        links = links_of(agent)
        assert len(links) == 1, links
        (name,) = links
        route = next(r for r in vcjob_routes() if r.destination == address)
        assert route.device == name
        sysctl = Path(podnet.forwarding_switch(name)).read_text()
        assert sysctl.strip() == "0", "the host must not forward what a pod sends elsewhere"
    assert links_of(agent) == {}
    assert name not in {link.name for link in podnet.parse_links(ip("-j", "link", "show"))}
    left = vcjob_routes()
    assert all(r.destination != address and r.device != name for r in left), left
    if running_node_agents() == 0:  # node agents of clusters in parallel keep the blackholes
        assert left == [], left
        assert not NETWORK_STATE_DIR.exists(), "the last node agent leaves nothing in /run"
