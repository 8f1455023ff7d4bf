"""A JobFlow's HTTP probe on the local cluster, against a pod that really runs: the client Job is
created while the server Job still runs, once the server's pod answers on its own address
(`--run-image python=python`: pods run as processes with a 10.244 address on a veth)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from localcluster.running import LocalCluster, running_cluster
from localcluster.simulator.runtime import runtime_available
from tests.support import polling

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(runtime_available() is not None, reason=str(runtime_available())),
]

WAIT = 120.0
SERVER = """
import http.server
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/ready" else 404); self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("", 8080), Handler).serve_forever()
"""

wait_for = functools.partial(polling.wait_for, timeout=WAIT)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    extra = ["--run-image", "python=python"]
    with running_cluster(
        tmp_path_factory.mktemp("probe"), controller=True, nodes=1, extra_args=extra
    ) as running:
        yield running


def template(name: str, container: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "tasks": [
                {
                    "name": "api",
                    "replicas": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
            ],
        },
    }


def get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def test_the_client_starts_once_the_server_answers(cluster: LocalCluster) -> None:
    server = template(
        "server",
        {"name": "main", "image": "python:3", "command": ["python", "-c", SERVER]},
    )
    client = template("client", {"name": "main", "image": "busybox"})
    flow = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "svc"},
        "spec": {
            "flows": [
                {"name": "server"},
                {
                    "name": "client",
                    "dependsOn": {
                        "targets": ["server"],
                        "probe": {
                            "httpGetList": [{"taskName": "api", "port": 8080, "path": "/ready"}]
                        },
                    },
                },
            ]
        },
    }
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([server, client, flow]))
    jobs = wait_for(
        lambda: {j["metadata"]["name"]: j for j in get(cluster, "vcjob")["items"]},
        lambda found: "svc-client" in found,
        "the client Job, after the server's pod answered",
    )
    # The server never ends: the probe, not its phase, let the client start. The probe answers
    # as soon as the pod serves, which may be before the server Job's status says Running.
    wait_for(
        lambda: get(cluster, "vcjob", "svc-server"),
        lambda job: ((job.get("status") or {}).get("state") or {}).get("phase") == "Running",
        "the server Job Running",
    )
    (pod,) = [
        p
        for p in get(cluster, "pods")["items"]
        if p["metadata"]["labels"].get("volcano.sh/job-name") == "svc-server"
    ]
    assert pod["status"]["podIP"].startswith("10.244.")
    created = jobs["svc-client"]["metadata"]["creationTimestamp"]
    assert created >= pod["status"]["startTime"]
    cluster.kubectl("delete", "jf", "svc", "--wait=false")
