"""Pod template hashes, ReplicaSet names and the ReplicaSet a Deployment makes."""

from __future__ import annotations

import copy
import re
from typing import Any

from localcluster.controllers.workloads.objects import POD_TEMPLATE_HASH, REVISION, REVISION_HISTORY
from localcluster.controllers.workloads.replicasets import new_pod
from localcluster.controllers.workloads.rollout import new_replica_set, replica_set_annotations
from localcluster.controllers.workloads.templates import (
    find_new_replica_set,
    replica_set_name,
    safe_encode,
    template_hash,
    templates_equal,
)

HASH = re.compile(r"^[bcdfghjklmnpqrstvwxz2456789]{1,10}$")


def template(image: str = "nginx:1.25") -> dict[str, Any]:
    return {
        "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "nginx",
                    "image": image,
                    "resources": {},
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "securityContext": {},
        },
    }


def deployment(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "d-uid",
            "generation": 1,
            "annotations": {
                "kubernetes.io/change-cause": "first",
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
                REVISION: "4",
            },
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
            **spec,
        },
    }


def test_the_hash_is_stable_short_and_kube_shaped() -> None:
    first = template_hash(template())
    assert first == template_hash(template())
    assert HASH.match(first)
    # Pinned: the same template names the same ReplicaSet across processes and versions.
    assert first == template_hash(copy.deepcopy(template()))
    assert first == "d867c46f6"


def test_the_hash_ignores_key_order_empty_fields_and_its_own_label() -> None:
    reordered = {"spec": template()["spec"], "metadata": {"labels": {"app": "web"}}}
    del reordered["spec"]["securityContext"]
    labelled = template()
    labelled["metadata"]["labels"][POD_TEMPLATE_HASH] = "whatever"
    assert template_hash(reordered) == template_hash(template()) == template_hash(labelled)


def test_the_hash_changes_with_the_template_and_the_collision_count() -> None:
    base = template_hash(template())
    assert template_hash(template("nginx:1.26")) != base
    assert template_hash(template(), collision_count=1) != base
    assert template_hash(template(), collision_count=0) == base


def test_safe_encode_maps_digits_like_apimachinery() -> None:
    # rand.SafeEncodeString maps each character into "bcdfghjklmnpqrstvwxz2456789".
    assert safe_encode("0123456789") == "456789bcdf"


def test_replica_set_name() -> None:
    assert replica_set_name("web", "7f5569bb7f") == "web-7f5569bb7f"


def test_templates_equal_ignores_the_hash_label_and_null_fields() -> None:
    stored = template()
    stored["metadata"]["labels"][POD_TEMPLATE_HASH] = "abc"
    through_kubectl = template()
    del through_kubectl["metadata"]["creationTimestamp"]
    del through_kubectl["spec"]["containers"][0]["resources"]
    assert templates_equal(stored, through_kubectl)
    assert not templates_equal(stored, template("nginx:1.26"))


def test_the_new_replica_set_is_the_oldest_with_the_deployments_template() -> None:
    def rs(name: str, created: str, image: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"template": template(image)},
        }

    older = rs("a", "2026-01-01T00:00:01Z", "nginx:1.25")
    newer = rs("b", "2026-01-01T00:00:02Z", "nginx:1.25")
    other = rs("c", "2026-01-01T00:00:00Z", "nginx:1.26")
    assert find_new_replica_set(deployment(), [newer, other, older]) is older
    assert find_new_replica_set(deployment(), [other]) is None


def test_new_replica_set_carries_hash_owner_revision_and_annotations() -> None:
    rs = new_replica_set(deployment(), "abc12", 5, 1)
    meta = rs["metadata"]
    assert meta["name"] == "web-abc12"
    assert meta["namespace"] == "default"
    assert meta["labels"] == {"app": "web", POD_TEMPLATE_HASH: "abc12"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": "d-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["annotations"] == {
        "kubernetes.io/change-cause": "first",
        REVISION: "5",
        "deployment.kubernetes.io/desired-replicas": "2",
        "deployment.kubernetes.io/max-replicas": "3",
    }
    assert rs["spec"]["replicas"] == 1
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", POD_TEMPLATE_HASH: "abc12"}}
    assert rs["spec"]["template"]["metadata"]["labels"][POD_TEMPLATE_HASH] == "abc12"
    assert templates_equal(rs["spec"]["template"], deployment()["spec"]["template"])


def test_a_rolled_back_replica_set_gets_the_next_revision_and_remembers_its_old_one() -> None:
    annotations = replica_set_annotations(deployment(), {REVISION: "1"}, 3)
    assert annotations[REVISION] == "3"
    assert annotations[REVISION_HISTORY] == "1"
    again = replica_set_annotations(deployment(), annotations | {REVISION: "3"}, 5)
    assert again[REVISION_HISTORY] == "1,3"
    # A current revision is never lowered.
    assert replica_set_annotations(deployment(), {REVISION: "7"}, 3)[REVISION] == "7"


def test_pods_come_from_the_template_with_a_controller_reference() -> None:
    rs = new_replica_set(deployment(), "abc12", 1, 2)
    rs["metadata"]["uid"] = "rs-uid"
    pod = new_pod(rs)
    assert pod["metadata"]["generateName"] == "web-abc12-"
    assert pod["metadata"]["labels"] == {"app": "web", POD_TEMPLATE_HASH: "abc12"}
    assert pod["metadata"]["ownerReferences"][0] | {"uid": None} == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-abc12",
        "uid": None,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "rs-uid"
    assert pod["spec"] == rs["spec"]["template"]["spec"]
    assert pod["spec"] is not rs["spec"]["template"]["spec"]
