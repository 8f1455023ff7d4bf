"""A local cluster with Kueue (`vcjob local up --kueue`: Kueue's CRDs from its module and its
manager built by `make kueue`), vcjob's webhook, controller and node agent, and a ClusterQueue
with quota for one of the tests' jobs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from localcluster.running import LocalCluster, running_cluster

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: vcjob-e2e}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "2"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: kueue-e2e-high}
value: 1000
"""


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("kueue"),
        controller=True,
        nodes=2,
        pod_runtime="600s",
        extra_args=["--kueue"],
    ) as running:
        running.kubectl("apply", "-f", "-", input=QUEUES)
        yield running


@pytest.fixture
def namespace(cluster: LocalCluster) -> str:
    """A namespace with a LocalQueue `lq` of the ClusterQueue."""
    name = f"kq-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    local_queue = (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        f"metadata: {{name: lq, namespace: {name}}}\nspec: {{clusterQueue: vcjob-e2e}}\n"
    )
    cluster.kubectl("apply", "-f", "-", input=local_queue)
    return name
