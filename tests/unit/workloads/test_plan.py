"""PodGroups for plain workloads, as tables: which pods get one, its name, owners, minMember,
minResources, queue, priority and annotations; what an owner's change or scale to zero asks."""

from __future__ import annotations

from typing import Any

import pytest

from controller.workloads.decide import (
    OwnerPlan,
    build_podgroup,
    in_own_group,
    is_workload_group,
    min_member,
    needs_podgroup,
    plan_for_owner,
    plan_for_pod,
    podgroup_name,
)

RS_REF = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "web-5d8f",
    "uid": "rs-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def pod(
    *,
    name: str = "web-5d8f-abcde",
    scheduler: str = "volcano",
    owners: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    priority: str | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": "pod-uid",
        "annotations": annotations or {},
        "labels": labels or {"app": "web"},
    }
    if owners is not None:
        meta["ownerReferences"] = owners
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": requests or {"cpu": "500m"}}}],
    }
    if priority:
        spec["priorityClassName"] = priority
    return {"metadata": meta, "spec": spec}


NEEDS = [
    # what, pod, needs a PodGroup
    ("volcano pod without a group", pod(), True),
    ("another scheduler", pod(scheduler="default-scheduler"), False),
    ("already in a group", pod(annotations={"scheduling.k8s.io/group-name": "g"}), False),
    ("empty group annotation", pod(annotations={"scheduling.k8s.io/group-name": ""}), True),
    ("being deleted", pod(deleting=True), False),
]


@pytest.mark.parametrize(("what", "the_pod", "expected"), NEEDS, ids=[r[0] for r in NEEDS])
def test_which_pods_need_a_podgroup(what: str, the_pod: dict[str, Any], expected: bool) -> None:
    assert needs_podgroup(the_pod, {"volcano"}) is expected


NAMES = [
    ("bare pod: its own uid", None, "podgroup-pod-uid"),
    ("controlled: the owner's uid", [RS_REF], "podgroup-rs-uid"),
    (
        "owner that does not control: the pod's uid",
        [{**RS_REF, "controller": False}],
        "podgroup-pod-uid",
    ),
]


@pytest.mark.parametrize(("what", "owners", "expected"), NAMES, ids=[r[0] for r in NAMES])
def test_podgroup_name(what: str, owners: list[dict[str, Any]] | None, expected: str) -> None:
    assert podgroup_name(pod(owners=owners)) == expected


MIN_MEMBER = [
    ({}, 1),
    ({"scheduling.volcano.sh/group-min-member": "3"}, 3),
    ({"scheduling.volcano.sh/group-min-member": "0"}, 0),
    ({"scheduling.volcano.sh/group-min-member": "-2"}, 1),
    ({"scheduling.volcano.sh/group-min-member": "two"}, 1),
]


@pytest.mark.parametrize(("annotations", "expected"), MIN_MEMBER)
def test_min_member_from_the_owner(annotations: dict[str, str], expected: int) -> None:
    assert min_member(annotations) == expected


def test_bare_pod_podgroup_is_owned_by_the_pod() -> None:
    group = build_podgroup(pod(), {})
    assert group["metadata"]["name"] == "podgroup-pod-uid"
    assert group["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "web-5d8f-abcde",
            "uid": "pod-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert group["spec"] == {
        "minMember": 1,
        "minResources": {
            "count/pods": "1",
            "cpu": "500m",
            "pods": "1",
            "requests.cpu": "500m",
        },
    }


def test_owned_pod_podgroup_takes_the_owner_annotations() -> None:
    owner = {
        "scheduling.volcano.sh/group-min-member": "2",
        "volcano.sh/preemptable": "false",
        "deployment.kubernetes.io/revision": "1",
    }
    the_pod = pod(
        owners=[RS_REF],
        annotations={
            "scheduling.volcano.sh/queue-name": "q1",
            "volcano.sh/preemptable": "true",
            "volcano.sh/jdb-min-available": "1",
            "volcano.sh/jdb-max-unavailable": "1",
            "volcano.sh/network-topology-mode": "soft",
            "volcano.sh/network-topology-highest-tier": "2",
        },
        labels={"app": "web", "volcano.sh/cooldown-time": "60s"},
        requests={"cpu": "1", "memory": "1Gi"},
        priority="high",
    )
    group = build_podgroup(the_pod, owner)
    meta, spec = group["metadata"], group["spec"]
    assert meta["name"] == "podgroup-rs-uid"
    assert meta["ownerReferences"] == [RS_REF]
    # The pod's own annotation wins over the inherited one; only volcano.sh/ ones are inherited.
    assert meta["annotations"] == {
        "volcano.sh/preemptable": "true",
        "volcano.sh/jdb-min-available": "1",
    }
    assert meta["labels"] == {"volcano.sh/cooldown-time": "60s"}
    assert spec["minMember"] == 2
    assert spec["queue"] == "q1"
    assert spec["priorityClassName"] == "high"
    assert spec["networkTopology"] == {"mode": "soft", "highestTierAllowed": 2}
    assert spec["minResources"]["cpu"] == "2"
    assert spec["minResources"]["requests.memory"] == str(2 * 2**30)
    assert spec["minResources"]["pods"] == "2"


def test_without_inheritance_the_owner_annotations_are_ignored() -> None:
    owner = {"scheduling.volcano.sh/group-min-member": "4", "volcano.sh/x": "y"}
    group = build_podgroup(pod(owners=[RS_REF]), owner, inherit=False)
    assert group["spec"]["minMember"] == 1
    assert group["metadata"]["annotations"] == {}


def test_missing_podgroup_is_created_and_the_pod_annotated() -> None:
    plan = plan_for_pod(pod(owners=[RS_REF]), None, {}, sync_existing=False)
    assert plan.create is not None and plan.update is None
    assert plan.name == "podgroup-rs-uid"
    assert plan.annotate_pod


def test_existing_podgroup_is_left_for_a_new_pod_but_synced_for_an_owner_change() -> None:
    existing = build_podgroup(pod(owners=[RS_REF]), {})
    existing["spec"]["queue"] = "default"  # the CRD's default, written by the API server
    owner = {"scheduling.volcano.sh/group-min-member": "3"}
    for_pod = plan_for_pod(pod(owners=[RS_REF]), existing, owner, sync_existing=False)
    assert for_pod.create is None and for_pod.update is None and for_pod.annotate_pod
    for_owner = plan_for_pod(pod(owners=[RS_REF]), existing, owner, sync_existing=True)
    assert for_owner.update is not None
    assert for_owner.update["spec"]["minMember"] == 3
    assert for_owner.update["spec"]["queue"] == "default"
    unchanged = plan_for_pod(pod(owners=[RS_REF]), existing, {}, sync_existing=True)
    assert unchanged.update is None


def test_a_pod_in_its_podgroup_is_not_annotated_again() -> None:
    the_pod = pod(owners=[RS_REF], annotations={"scheduling.k8s.io/group-name": "podgroup-rs-uid"})
    assert in_own_group(the_pod, {"volcano"})
    assert not in_own_group(
        pod(owners=[RS_REF], annotations={"scheduling.k8s.io/group-name": "lws-0"}), {"volcano"}
    )
    plan = plan_for_pod(the_pod, None, {}, sync_existing=True)
    assert plan.create is not None and not plan.annotate_pod


def replicaset(replicas: int | None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "kind": "ReplicaSet",
        "metadata": {"name": "web-5d8f", "namespace": "ns", "uid": "rs-uid"},
        "spec": spec,
    }


def statefulset(revision: str) -> dict[str, Any]:
    return {
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "ns", "uid": "sts-uid"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "db"}}},
        "status": {"updateRevision": revision},
    }


OTHER_NS = {**pod(name="web-other"), "metadata": {**pod()["metadata"], "namespace": "other"}}
DB_OLD = pod(name="db-0", labels={"app": "db", "controller-revision-hash": "db-1"})
DB_NEW = pod(name="db-1", labels={"app": "db", "controller-revision-hash": "db-2"})
OWNERS = [
    (
        "scaled to zero: its PodGroup goes",
        replicaset(0),
        [pod()],
        OwnerPlan(delete="podgroup-rs-uid"),
    ),
    ("replicas unset mean one", replicaset(None), [pod()], OwnerPlan(pod=pod())),
    ("first matching pod is synced", replicaset(2), [pod()], OwnerPlan(pod=pod())),
    ("no pods yet", replicaset(2), [], OwnerPlan()),
    ("pods of other namespaces do not match", replicaset(2), [OTHER_NS], OwnerPlan()),
    (
        "first pod of another scheduler ends it",
        replicaset(2),
        [pod(scheduler="default-scheduler")],
        OwnerPlan(),
    ),
    (
        "statefulset: only its update revision",
        statefulset("db-2"),
        [DB_OLD, DB_NEW],
        OwnerPlan(pod=DB_NEW),
    ),
]


@pytest.mark.parametrize(("what", "owner", "pods", "expected"), OWNERS, ids=[r[0] for r in OWNERS])
def test_owner_changes(
    what: str, owner: dict[str, Any], pods: list[dict[str, Any]], expected: OwnerPlan
) -> None:
    assert plan_for_owner(owner, pods, {"volcano"}) == expected


GROUPS = [
    ("named by this controller", "podgroup-0f3c", True),
    ("a Volcano Job's", "tf-job-0f3c", False),
    ("a name merely containing the prefix", "my-podgroup-0f3c", False),
    ("no name", None, False),
]


@pytest.mark.parametrize(("what", "name", "expected"), GROUPS, ids=[r[0] for r in GROUPS])
def test_which_podgroups_are_this_controllers(what: str, name: str | None, expected: bool) -> None:
    assert is_workload_group({"metadata": {"name": name}}) is expected
