"""Each really-running pod sees a root of its own: its volumes are mounted inside it and nothing
is created or changed on the host (the ServiceAccount token, a ConfigMap key as a file where
another pod mounts a directory, a nested emptyDir, a subPath). Runs with the cluster's folder
under /tmp, where a private /tmp must still show the installation that plays the image."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.running import LocalCluster, running_cluster
from localcluster.simulator.runtime import runtime_available
from tests.support import polling

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(runtime_available() is not None, reason=str(runtime_available())),
]

# Every mount path the pods below use, and the host directories on the way to them.
WATCHED = [
    "/var/run/secrets",
    "/run/secrets",
    "/etc/volcano",
    "/root/.ssh",
    "/opt/vcjob-test",
    "/data",
    "/scratch",
]


def host_view(path: str) -> tuple[str, Any]:
    """What the host has at `path`: absent, a file with its content, or a directory listing."""
    target = Path(path)
    if not target.exists() and not target.is_symlink():
        return ("absent", None)
    if target.is_dir():
        return ("dir", sorted(str(p.relative_to(target)) for p in target.rglob("*")))
    return ("file", target.read_bytes())


CHECKS = """
import os, sys
def read(path):
    with open(path) as handle:
        return handle.read().strip()
checks = {
    "token": bool(read("/var/run/secrets/kubernetes.io/serviceaccount/token")),
    "namespace": read("/var/run/secrets/kubernetes.io/serviceaccount/namespace"),
    "volcano": sorted(n for n in os.listdir("/etc/volcano") if not n.startswith("..")),
    "hostfile": read(os.environ["HOSTFILE"]) if os.environ.get("HOSTFILE") else "",
    "nested": read("/data/conf/hostfile") if os.path.isdir("/data/conf") else "",
    "ssh": read("/root/.ssh/config") if os.path.exists("/root/.ssh/config") else "",
}
os.makedirs("/data/written/by/pod", exist_ok=True)
print("CHECKS " + __import__("json").dumps(checks, sort_keys=True), flush=True)
"""


def pod(
    name: str, mounts: list[dict[str, Any]], volumes: list[dict[str, Any]], env: dict[str, str]
) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "python:3",
                    "command": ["python", "-c", CHECKS],
                    "workingDir": "/opt/vcjob-test/work",
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "volumeMounts": mounts,
                }
            ],
            "volumes": volumes,
        },
    }
    return yaml.safe_dump(document)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    # The cluster's folder under /tmp on purpose: the pods' /tmp is their own.
    with tempfile.TemporaryDirectory(prefix="vcjob-root-", dir="/tmp") as folder:
        extra = ["--bare", "--run-image", "python=python"]
        with running_cluster(Path(folder), webhook=False, extra_args=extra) as local:
            yield local


def test_pods_mount_inside_their_own_root_and_leave_the_host_as_it_was(
    cluster: LocalCluster,
) -> None:
    before = {path: host_view(path) for path in WATCHED}
    cluster.kubectl("create", "configmap", "hosts", "--from-literal=hostfile=node-0\nnode-1")
    cluster.kubectl("create", "configmap", "ssh", "--from-literal=config=StrictHostKeyChecking no")
    hosts = {"name": "hosts", "configMap": {"name": "hosts"}}
    ssh = {"name": "ssh", "configMap": {"name": "ssh"}}
    scratch = {"name": "scratch", "emptyDir": {}}
    # One pod mounts /etc/volcano as a directory; the other mounts one key as a file under it.
    as_directory = pod(
        "as-directory",
        [
            {"name": "hosts", "mountPath": "/etc/volcano"},
            {"name": "scratch", "mountPath": "/data"},
            {"name": "hosts", "mountPath": "/data/conf"},  # nested inside the emptyDir
            {"name": "ssh", "mountPath": "/root/.ssh"},
        ],
        [hosts, scratch, ssh],
        {"HOSTFILE": "/etc/volcano/hostfile"},
    )
    as_file = pod(
        "as-file",
        [
            {"name": "hosts", "mountPath": "/etc/volcano/hostfile", "subPath": "hostfile"},
            {"name": "scratch", "mountPath": "/data"},
            {"name": "ssh", "mountPath": "/root/.ssh/config", "subPath": "config"},
        ],
        [hosts, scratch, ssh],
        {"HOSTFILE": "/etc/volcano/hostfile"},
    )
    cluster.kubectl("create", "-f", "-", input=as_directory)
    cluster.kubectl("create", "-f", "-", input=as_file)

    def phase(name: str) -> str:
        document = json.loads(cluster.kubectl("get", "pod", name, "-o", "json").stdout)
        return str(document.get("status", {}).get("phase", ""))

    for name in ("as-directory", "as-file"):
        polling.wait_until(
            f"{name} to finish", lambda name=name: phase(name) in ("Succeeded", "Failed")
        )
    results = {}
    for name in ("as-directory", "as-file"):
        output = cluster.kubectl("logs", name).stdout
        assert phase(name) == "Succeeded", output
        line = next(line for line in output.splitlines() if line.startswith("CHECKS "))
        results[name] = json.loads(line.removeprefix("CHECKS "))
    assert results["as-directory"] == {
        "token": True,
        "namespace": "default",
        "volcano": ["hostfile"],
        "hostfile": "node-0\nnode-1",
        "nested": "node-0\nnode-1",
        "ssh": "StrictHostKeyChecking no",
    }
    assert results["as-file"]["hostfile"] == "node-0\nnode-1"
    assert results["as-file"]["volcano"] == ["hostfile"]
    assert results["as-file"]["ssh"] == "StrictHostKeyChecking no"
    assert results["as-file"]["token"] is True
    after = {path: host_view(path) for path in WATCHED}
    assert after == before
    # What a pod writes into an emptyDir stays in the cluster's folder.
    written = list(cluster.dir.rglob("written/by/pod"))
    assert written, "the emptyDir's contents are under the cluster's --dir"
    assert not os.path.exists("/data/written")
