"""One local cluster (webhook, controller, node agent with four nodes, as Volcano's kind cluster)
set up as `scripts/volcano-e2e` sets it up for Volcano's own suites, at vcjob's defaults."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from localcluster.running import LocalCluster, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # Pods run for ten minutes unless they say otherwise: jobs stay Running while tested.
    with running_cluster(
        tmp_path_factory.mktemp("volcano-suites"),
        controller=True,
        nodes=4,
        pod_runtime="600s",
    ) as running:
        yield running


@pytest.fixture
def namespace(cluster: LocalCluster) -> Iterator[str]:
    name = f"vs-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
