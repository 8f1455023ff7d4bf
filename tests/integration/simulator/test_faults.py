"""Under injected API faults the cluster still comes up and the simulator still runs pods."""

from __future__ import annotations

from pathlib import Path

from localcluster.running import running_cluster
from localcluster.simulator.client import PODS
from tests.support.polling import wait_for


def test_pods_run_to_completion_despite_api_faults(tmp_path: Path) -> None:
    with running_cluster(
        tmp_path, webhook=False, nodes=1, pod_runtime="1s", fault_rate=0.2
    ) as cluster:
        client = cluster.rest_client()
        for index in range(3):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{index}"},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                },
            }
            client.create(PODS, pod, "default")
        wait_for(
            lambda: sorted(
                str((p.get("status") or {}).get("phase"))
                for p in client.list(PODS, "default")["items"]
            ),
            lambda phases: phases == ["Succeeded"] * 3,
            "the three pods Succeeded",
            timeout=40,
        )
