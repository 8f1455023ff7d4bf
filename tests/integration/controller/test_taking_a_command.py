"""Taking a Command on kube-apiserver: only the delete that removes it reports success when the
caller asks (`missing_ok=False`), so two controller instances never both carry it out."""

from __future__ import annotations

import pytest

from kubeio.client import COMMANDS, Kube
from kubeio.errors import NotFoundError
from localcluster.running import LocalCluster

pytestmark = pytest.mark.slow


def test_only_the_first_delete_of_a_command_takes_it(cluster: LocalCluster) -> None:
    kube = Kube(cluster.api_client(), qps=0)
    command = kube.create(
        COMMANDS,
        "default",
        {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"name": "close-q-taken-once", "namespace": "default"},
            "action": "CloseQueue",
            "target": {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "name": "q",
                "uid": "queue-uid",
            },
        },
    )
    uid = command["metadata"]["uid"]
    kube.delete(COMMANDS, "default", "close-q-taken-once", uid=uid, missing_ok=False)
    with pytest.raises(NotFoundError):
        kube.delete(COMMANDS, "default", "close-q-taken-once", uid=uid, missing_ok=False)
    # Other callers keep treating a 404 as done.
    assert kube.delete(COMMANDS, "default", "close-q-taken-once", uid=uid) is None
