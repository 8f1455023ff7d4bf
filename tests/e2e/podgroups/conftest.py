"""One local cluster (webhook, controller, node agent with two 8-CPU nodes) for the PodGroup
controller, the gang scheduler's Unknown phase, Volcano's metric names and its queue allocation
gate (the webhook runs with SchedulingGatesQueueAdmission on)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from localcluster.running import LocalCluster, running_cluster


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # One cluster for the folder's modules (each test has a namespace of its own, deleted with
    # its pods; what they read cluster-wide, the default Queue and metric names, they only read).
    # Pods run for ten minutes unless they say otherwise: gangs stay Running while tested.
    with running_cluster(
        tmp_path_factory.mktemp("podgroups"),
        controller=True,
        nodes=2,
        pod_runtime="600s",
        extra_args=("--feature-gates", "SchedulingGatesQueueAdmission=true"),
    ) as running:
        yield running


@pytest.fixture
def namespace(cluster: LocalCluster) -> Iterator[str]:
    """A namespace of the test's own, deleted afterwards with its pods (the next gang needs the
    nodes)."""
    name = f"pg-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=100s", check=False)
