"""One local cluster (webhook, controller, simulator) for the CronJob, queue and CLI tests."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.running import LocalCluster, running_cluster

# The test modules import their helpers as `batch_helpers`.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # Pods run for ten minutes: every job these tests start is still Running when they look.
    with running_cluster(
        tmp_path_factory.mktemp("batch"), controller=True, nodes=2, pod_runtime="600s"
    ) as running:
        yield running


@pytest.fixture
def namespace(cluster: LocalCluster) -> str:
    name = f"b-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    return name
