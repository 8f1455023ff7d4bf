"""Under injected API faults the cluster still comes up and the simulator still runs pods."""

from __future__ import annotations

import time
from pathlib import Path

from localcluster.simulator.client import PODS
from localcluster.testing import running_cluster


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
        deadline = time.monotonic() + 40
        phases: list[str] = []
        while time.monotonic() < deadline:
            listing = client.list(PODS, "default")
            phases = sorted(str((p.get("status") or {}).get("phase")) for p in listing["items"])
            if phases == ["Succeeded"] * 3:
                break
            time.sleep(0.3)
        assert phases == ["Succeeded"] * 3
