"""One local cluster (webhook, controller, node agent) for the lifecycle tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from localcluster.running import LocalCluster, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # Pods run for ten minutes: a job runs until the test stops it.
    with running_cluster(
        tmp_path_factory.mktemp("lifecycle"), controller=True, nodes=2, pod_runtime="600s"
    ) as running:
        yield running


@pytest.fixture
def namespace(cluster: LocalCluster) -> str:
    name = f"l-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    return name
