"""Installing the chart beside an existing Volcano: its CRDs (here the ones the local cluster
pre-applies, owned by no release, as Volcano's chart leaves them) stay exactly as they are."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcluster.running import LocalCluster
from localcluster.tools import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHART = str(PROJECT_ROOT / "charts" / "vcjob")
SCHEDULING_CRDS = (
    "podgroups.scheduling.volcano.sh",
    "queues.scheduling.volcano.sh",
    "hypernodes.topology.volcano.sh",
)
BATCH_CRDS = (
    "jobs.batch.volcano.sh",
    "cronjobs.batch.volcano.sh",
    "commands.bus.volcano.sh",
    "jobflows.flow.volcano.sh",
    "jobtemplates.flow.volcano.sh",
)
MARK = "example.com/installed-by=volcano"


def crd(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout))


def test_a_plain_install_refuses_to_take_over_foreign_crds(
    cluster: LocalCluster, helm: Any
) -> None:
    done = helm("install", "grab", CHART, "-n", "vcjob-grab", "--create-namespace", check=False)
    assert done.returncode != 0
    assert "podgroups.scheduling.volcano.sh" in done.stderr or "exists" in done.stderr


@pytest.mark.parametrize("flag", ["crds.onlyAbsent=true", "crds.scheduling=false"])
def test_volcanos_scheduling_crds_are_left_alone(
    cluster: LocalCluster, helm: Any, flag: str
) -> None:
    for name in SCHEDULING_CRDS:
        cluster.kubectl("annotate", "crd", name, MARK, "--overwrite")
    before = {name: crd(cluster, name) for name in SCHEDULING_CRDS}
    release = "beside" if flag.startswith("crds.only") else "nosched"
    namespace = f"vcjob-{release}"
    sets = ["--set", flag, "--set", "queue.createDefault=false"]
    if flag == "crds.scheduling=false":
        # Volcano's batch and flow CRDs are replaced by vcjob's: free their names for this release.
        cluster.kubectl("delete", "crd", *BATCH_CRDS)
    try:
        helm("install", release, CHART, "-n", namespace, "--create-namespace", *sets)
        for name in SCHEDULING_CRDS:
            after = crd(cluster, name)
            assert after["metadata"]["annotations"]["example.com/installed-by"] == "volcano"
            assert "meta.helm.sh/release-name" not in after["metadata"].get("annotations", {})
            assert after["spec"] == before[name]["spec"]
            assert (
                after["metadata"]["resourceVersion"] == before[name]["metadata"]["resourceVersion"]
            )
        jobs = crd(cluster, "jobs.batch.volcano.sh")
        owner = (jobs["metadata"].get("annotations") or {}).get("meta.helm.sh/release-name")
        assert owner == (release if flag == "crds.scheduling=false" else None)
    finally:
        helm("uninstall", release, "-n", namespace, check=False)
