"""On a bare cluster the node agent starts before any Volcano CRD exists; the chart installs them
later. The agent must notice the PodGroup and Queue resources within seconds, so the first Job
after `helm install` is scheduled at once (it used to wait up to a minute, silently: the agent
looked for a resource it did not find again only after 60 s)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from localcluster.running import running_cluster
from localcluster.tools import PROJECT_ROOT
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e]

CRDS = PROJECT_ROOT / "charts" / "vcjob" / "files" / "crds"
# Well under the old 60 s, generous for a loaded machine.
ADMITTED_WITHIN = 20.0


def test_a_gang_is_admitted_soon_after_the_crds_arrive(tmp_path: Path) -> None:
    with running_cluster(
        tmp_path / "cluster", webhook=False, controller=False, extra_args=["--bare"]
    ) as cluster:
        # The agent is up and has found no PodGroup or Queue resource, as before `helm install`.
        agent_log = cluster.dir / "logs" / "simulator.log"
        wait_until(
            "the node agent has started",
            lambda: agent_log.is_file() and "node agent started" in agent_log.read_text(),
            60.0,
        )
        wait_until(
            "the nodes are Ready",
            lambda: (
                "True True True"
                in cluster.kubectl(
                    "get",
                    "nodes",
                    "-o",
                    'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}',
                ).stdout
            ),
            60.0,
        )
        for name in ("podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh"):
            cluster.kubectl("create", "-f", str(CRDS / f"{name}.yaml"))
        for name in ("podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh"):
            cluster.kubectl("wait", f"crd/{name}", "--for=condition=Established", "--timeout=30s")
        queue = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "default"},
            "spec": {"weight": 1},
        }
        group = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "gang", "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default"},
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "member",
                "namespace": "default",
                "annotations": {"scheduling.k8s.io/group-name": "gang"},
            },
            "spec": {
                "schedulerName": "volcano",
                "containers": [{"name": "c", "image": "busybox"}],
            },
        }
        started = time.monotonic()
        cluster.kubectl("create", "-f", "-", input=yaml.safe_dump_all([queue, group, pod]))

        def bound() -> bool:
            found = json.loads(cluster.kubectl("get", "pod", "member", "-o", "json").stdout)
            return bool(found["spec"].get("nodeName"))

        wait_until("the gang's pod is bound", bound, ADMITTED_WITHIN)
        took = time.monotonic() - started  # before the read below, which is not the agent's
        phase = cluster.kubectl(
            "get", "podgroups.scheduling.volcano.sh", "gang", "-o", "jsonpath={.status.phase}"
        ).stdout
        assert phase in ("Inqueue", "Running"), phase
        assert took < ADMITTED_WITHIN
