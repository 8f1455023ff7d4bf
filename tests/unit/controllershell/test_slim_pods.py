"""What the job controller's cache keeps of a pod: its spec cut to `POD_SPEC_KEPT`, whatever way
the pod came in (a watch event, a list, the controller's own create)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.job.shell.cache import POD, Cache, slim_pod

FULL_SPEC = {
    "nodeName": "node-1",
    "schedulerName": "volcano",
    "restartPolicy": "Never",
    "containers": [{"name": "main", "image": "busybox", "volumeMounts": [{"name": "v"}]}],
    "volumes": [{"name": "kube-api-access-x", "projected": {"sources": []}}],
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
    "dnsPolicy": "ClusterFirst",
}
KEPT_SPEC = {"nodeName": "node-1", "schedulerName": "volcano", "restartPolicy": "Never"}

SLIMMED: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "the spec cut to what the controller reads; metadata and status whole",
        {"metadata": {"name": "p"}, "spec": FULL_SPEC, "status": {"phase": "Running"}},
        {"metadata": {"name": "p"}, "spec": KEPT_SPEC, "status": {"phase": "Running"}},
    ),
    ("a spec already cut", {"spec": KEPT_SPEC}, {"spec": KEPT_SPEC}),
    ("no spec", {"metadata": {"name": "p"}}, {"metadata": {"name": "p"}}),
    ("a spec that is not an object", {"spec": "x"}, {"spec": "x"}),
]


@pytest.mark.parametrize(("what", "pod", "expected"), SLIMMED, ids=[r[0] for r in SLIMMED])
def test_slim_pod(what: str, pod: dict[str, Any], expected: dict[str, Any]) -> None:
    given = copy.deepcopy(pod)
    assert slim_pod(given) is given
    assert given == expected


def pod(version: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": "j-w-0",
            "uid": "p1",
            "resourceVersion": version,
            "labels": {"volcano.sh/job-name": "j"},
        },
        "spec": copy.deepcopy(FULL_SPEC),
        "status": {"phase": "Pending"},
    }


def test_the_cache_keeps_pods_slim_however_they_come_in() -> None:
    cache = Cache()
    cache.replace_all(POD, [pod("1")])
    assert cache.view("ns/j").pods[0]["spec"] == KEPT_SPEC
    cache.upsert(POD, pod("2"))
    assert cache.view("ns/j").pods[0]["spec"] == KEPT_SPEC
    cache.store_written(POD, pod("3"))
    assert cache.view("ns/j").pods[0]["spec"] == KEPT_SPEC
    assert cache.view("ns/j").pods[0]["metadata"]["resourceVersion"] == "3"
