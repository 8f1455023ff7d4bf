"""`vcjob local up --bare` leaves room for the chart: `helm install vcjob charts/vcjob` works on it
as on a new cluster (on a full `local up` the CRDs it pre-applies would clash with the chart's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localcluster.running import running_cluster
from localcluster.tools import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_helm_install_on_a_bare_local_cluster(tmp_path: Path) -> None:
    with running_cluster(
        tmp_path / "cluster", simulator=False, webhook=False, extra_args=["--bare"]
    ) as cluster:
        crds = json.loads(cluster.kubectl("get", "crds", "-o", "json").stdout)["items"]
        assert not [c for c in crds if c["metadata"]["name"].endswith("volcano.sh")]
        result = cluster.helm(
            "install", "vcjob", str(PROJECT_ROOT / "charts" / "vcjob"),
            "-n", "vcjob-system", "--create-namespace",
            home=tmp_path / "helm-home", check=False, timeout=180,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        cluster.kubectl("get", "crd", "jobs.batch.volcano.sh")
        # Served at once: the controller (not running here) creates the `default` Queue in it.
        cluster.kubectl("get", "queues")
