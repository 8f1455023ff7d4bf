"""Pods that really run (`vcjob local up --bare --run-image python=python`): their own network
namespaces and addresses, probes, logs, restarts with back-off, graceful termination, Secret
volumes kept current, and Services routed to ready endpoints. Every wait is bounded."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from localcluster.running import LocalCluster, running_cluster
from localcluster.simulator import podnet
from localcluster.simulator.runtime import runtime_available
from tests.support import polling

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(runtime_available() is not None, reason=str(runtime_available())),
]

WAIT = 60.0

SERVER = """
import http.server, os, sys
name = os.environ["POD_NAME"]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (name + ":" + open("/etc/secret/value").read()).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *args):
        pass
print("serving", name, flush=True)
http.server.HTTPServer(("", 8080), Handler).serve_forever()  # every address of the pod
"""

CRASHER = """
import sys
print("run", flush=True)
sys.exit(3)
"""

# Stays up through SIGTERM (its sleep only keeps it running), until SIGKILL.
STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: print("got SIGTERM, staying", flush=True))
print("up", flush=True)
while True:
    time.sleep(0.1)
"""


def pod(name: str, script: str, **spec: Any) -> str:
    container: dict[str, Any] = {
        "name": "main",
        "image": "python:3",
        "command": ["python", "-c", script],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    }
    container.update(spec.pop("container", {}))
    document = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": spec.pop("labels", {})},
        "spec": {"containers": [container], **spec},
    }
    return yaml.safe_dump(document)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    extra = ["--bare", "--run-image", "python=python"]
    with running_cluster(
        tmp_path_factory.mktemp("runtime"), webhook=False, extra_args=extra
    ) as local:
        yield local


def get(cluster: LocalCluster, *args: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(cluster.kubectl("get", "-o", "json", *args).stdout)
    return document


wait_for = functools.partial(polling.wait_until, timeout=WAIT)


def container_status(cluster: LocalCluster, name: str) -> dict[str, Any]:
    statuses = get(cluster, "pod", name)["status"].get("containerStatuses") or [{}]
    return dict(statuses[0])


def container_ready(cluster: LocalCluster, name: str) -> bool:
    return container_status(cluster, name).get("ready") is True


def test_two_pods_serve_the_same_port_behind_a_service(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "secret", "generic", "shared", "--from-literal=value=one")
    volume = {"volumes": [{"name": "s", "secret": {"secretName": "shared"}}]}
    container = {
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 1},
        "volumeMounts": [{"name": "s", "mountPath": "/etc/secret", "readOnly": True}],
    }
    for name in ("web-a", "web-b"):
        manifest = pod(name, SERVER, container=container, labels={"app": "web"}, **volume)
        cluster.kubectl("create", "-f", "-", input=manifest)
    cluster.kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")  # selects app=web
    for name in ("web-a", "web-b"):
        wait_for(f"{name} ready", functools.partial(container_ready, cluster, name))
    addresses = {}
    for name in ("web-a", "web-b"):
        ip = get(cluster, "pod", name)["status"]["podIP"]
        assert podnet.is_real_pod_address(ip), ip
        assert httpx.get(f"http://{ip}:8080/", timeout=5).text == f"{name}:one"
        addresses[name] = ip

    def endpoints_ready() -> bool:
        subsets = get(cluster, "endpoints", "web").get("subsets") or []
        return sorted(a["ip"] for s in subsets for a in s.get("addresses") or []) == sorted(
            addresses.values()
        )

    wait_for("both pods in the Service's endpoints", endpoints_ready)
    rotated = {"stringData": {"value": "two"}}
    cluster.kubectl("patch", "secret", "shared", "-p", json.dumps(rotated))
    wait_for("the rotated Secret inside the pod", lambda: httpx.get(
        f"http://{addresses['web-a']}:8080/", timeout=5).text == "web-a:two")  # fmt: skip


def test_logs_restarts_and_back_off(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "-f", "-", input=pod("crasher", CRASHER, restartPolicy="OnFailure"))
    wait_for(
        "two restarts",
        lambda: int(container_status(cluster, "crasher").get("restartCount") or 0) >= 2,
    )
    status = container_status(cluster, "crasher")
    assert status["lastState"]["terminated"]["exitCode"] == 3
    wait_for("CrashLoopBackOff", lambda: (container_status(cluster, "crasher").get("state") or {})
             .get("waiting", {}).get("reason") == "CrashLoopBackOff")  # fmt: skip
    assert cluster.kubectl("logs", "crasher", "--previous").stdout == "run\n"
    assert cluster.kubectl("logs", "crasher", "--tail", "1", "-c", "main").stdout == "run\n"
    followed = cluster.kubectl("logs", "-f", "crasher", "--request-timeout", "20s")
    assert followed.stdout == "run\n"


def test_deletion_sends_sigterm_then_sigkill_after_the_grace_period(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "-f", "-",
                    input=pod("stubborn", STUBBORN, terminationGracePeriodSeconds=2))  # fmt: skip
    wait_for(
        "stubborn to run", lambda: "up" in cluster.kubectl("logs", "stubborn", check=False).stdout
    )
    started = time.monotonic()
    cluster.kubectl("delete", "pod", "stubborn", "--wait=true", "--timeout=30s")
    took = time.monotonic() - started
    assert 1.5 <= took <= 15, took


def test_liveness_failure_restarts_the_container(cluster: LocalCluster) -> None:
    container = {"livenessProbe": {"exec": {"command": ["false"]}, "periodSeconds": 1,
                                   "failureThreshold": 2}}  # fmt: skip
    cluster.kubectl("create", "-f", "-", input=pod("unhealthy", STUBBORN, container=container,
                                                   terminationGracePeriodSeconds=1))  # fmt: skip

    def restarted() -> bool:
        return int(container_status(cluster, "unhealthy").get("restartCount") or 0) >= 1

    wait_for("a liveness restart", restarted)
