"""Cascading deletion and namespace deletion, driven with kubectl as users do."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import yaml

Cluster = Any  # the `cluster` fixture of conftest.py


WAIT = "--timeout=15s"


def configmap(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "data": {"k": "v"},
    }


def owned_by(owner: dict[str, Any], block: bool = False) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "blockOwnerDeletion": block,
        }
    ]


def family(cluster: Cluster, block: bool = False, **extra: Any) -> tuple[str, list[str]]:
    suffix = uuid.uuid4().hex[:6]
    owner = cluster.create(configmap(f"owner-{suffix}"))
    names = [f"dep{i}-{suffix}" for i in (1, 2)]
    for name in names:
        cluster.create(configmap(name, ownerReferences=owned_by(owner, block), **extra))
    return owner["metadata"]["name"], names


def eventually(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def test_background_cascade_deletes_the_dependents(cluster: Cluster) -> None:
    owner, dependents = family(cluster)
    cluster.kubectl("delete", "configmap", owner, "--cascade=background")
    cluster.kubectl("wait", "--for=delete", *[f"configmap/{d}" for d in dependents], WAIT)


def test_foreground_cascade_waits_for_blocking_dependents(cluster: Cluster) -> None:
    owner, dependents = family(cluster, block=True, finalizers=["example.com/hold"])
    cluster.kubectl("delete", "configmap", owner, "--cascade=foreground", "--wait=false")

    def dependents_terminating() -> bool:
        found = [cluster.get("configmap", d) for d in dependents]
        return all(d is not None and d["metadata"].get("deletionTimestamp") for d in found)

    eventually(dependents_terminating)
    held = cluster.get("configmap", owner)
    assert held is not None and "foregroundDeletion" in held["metadata"]["finalizers"]
    for name in dependents:
        cluster.kubectl(
            "patch",
            "configmap",
            name,
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/metadata/finalizers"}]',
        )
    cluster.kubectl(
        "wait", "--for=delete", f"configmap/{owner}", *[f"configmap/{d}" for d in dependents], WAIT
    )


def test_foreground_cascade_removes_a_whole_tree(cluster: Cluster) -> None:
    suffix = uuid.uuid4().hex[:6]
    root = cluster.create(configmap(f"root-{suffix}"))
    child = cluster.create(configmap(f"child-{suffix}", ownerReferences=owned_by(root, True)))
    cluster.create(configmap(f"grandchild-{suffix}", ownerReferences=owned_by(child, True)))
    cluster.kubectl("delete", "configmap", f"root-{suffix}", "--cascade=foreground", WAIT)
    assert cluster.get("configmap", f"child-{suffix}") is None
    assert cluster.get("configmap", f"grandchild-{suffix}") is None


def test_orphan_cascade_keeps_the_dependents_without_the_owner_reference(cluster: Cluster) -> None:
    owner, dependents = family(cluster, block=True)
    cluster.kubectl("delete", "configmap", owner, "--cascade=orphan", WAIT)
    assert cluster.get("configmap", owner) is None
    for name in dependents:
        left = cluster.get("configmap", name)
        assert left is not None
        assert not left["metadata"].get("ownerReferences")


def test_dependent_of_a_missing_owner_is_collected(cluster: Cluster) -> None:
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ghost", "uid": str(uuid.uuid4())},
    }
    name = f"orphaned-{uuid.uuid4().hex[:6]}"
    cluster.create(configmap(name, ownerReferences=owned_by(ghost)))
    cluster.kubectl("wait", "--for=delete", f"configmap/{name}", WAIT)


def test_dependent_with_a_living_owner_stays(cluster: Cluster) -> None:
    owner, dependents = family(cluster)
    time.sleep(1.5)
    assert all(cluster.get("configmap", d) is not None for d in dependents)
    cluster.kubectl("delete", "configmap", "--ignore-not-found", owner, *dependents)


def test_cluster_scoped_owner_cascades_to_namespaced_dependents(cluster: Cluster) -> None:
    suffix = uuid.uuid4().hex[:6]
    role = cluster.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"owner-{suffix}"},
            "rules": [],
        }
    )
    name = f"dep-{suffix}"
    cluster.create(configmap(name, ownerReferences=owned_by(role)))
    cluster.kubectl("delete", "clusterrole", role["metadata"]["name"])
    cluster.kubectl("wait", "--for=delete", f"configmap/{name}", WAIT)


def test_deleting_a_namespace_empties_it_then_removes_it(cluster: Cluster) -> None:
    namespace = f"doomed-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    for i in range(3):
        cluster.create(configmap(f"cm{i}", namespace))
    cluster.kubectl("create", "secret", "generic", "s", "-n", namespace, "--from-literal=a=b")
    cluster.kubectl("delete", "namespace", namespace, "--wait=false")
    cluster.kubectl("wait", "--for=delete", f"namespace/{namespace}", WAIT)
    items, _ = cluster.api.list_all(f"/api/v1/namespaces/{namespace}/configmaps")
    assert items == []


def test_a_new_namespace_gets_its_service_account_and_root_ca(cluster: Cluster) -> None:
    namespace = f"fresh-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("wait", "--for=create", "-n", namespace, "serviceaccount/default", WAIT)
    cluster.kubectl("wait", "--for=create", "-n", namespace, "configmap/kube-root-ca.crt", WAIT)
    root_ca = cluster.get("-n", namespace, "configmap", "kube-root-ca.crt")
    assert root_ca is not None
    kubeconfig = yaml.safe_load(cluster.kubeconfig.read_text())
    ca = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"])
    assert root_ca["data"]["ca.crt"] == ca.decode()
    cluster.kubectl("delete", "namespace", namespace, "--wait=false")
    cluster.kubectl("wait", "--for=delete", f"namespace/{namespace}", WAIT)


def test_custom_resources_created_later_are_collected_too(cluster: Cluster) -> None:
    suffix = uuid.uuid4().hex[:6]
    group = f"gc{suffix}.example.com"
    cluster.create(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    }
                                },
                            }
                        },
                    }
                ],
            },
        }
    )
    cluster.kubectl("wait", "--for=condition=Established", f"crd/widgets.{group}", WAIT)
    owner = cluster.create(configmap(f"widget-owner-{suffix}"))

    def widget_created() -> bool:
        widget = {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "ownerReferences": owned_by(owner)},
            "spec": {},
        }
        return "created" in cluster.kubectl(
            "create", "-f", "-", stdin=json.dumps(widget), check=False
        )

    eventually(widget_created)  # discovery of a new CRD may lag a moment behind Established
    cluster.kubectl("delete", "configmap", owner["metadata"]["name"])
    cluster.kubectl("wait", "--for=delete", f"widgets.{group}/w", WAIT)


def test_foreground_deletion_of_an_object_without_dependents_completes(cluster: Cluster) -> None:
    name = f"lonely-{uuid.uuid4().hex[:6]}"
    cluster.create(configmap(name))
    cluster.kubectl("delete", "configmap", name, "--cascade=foreground", WAIT)
    assert cluster.get("configmap", name) is None


def test_dependent_with_another_living_owner_loses_only_the_deleted_reference(
    cluster: Cluster,
) -> None:
    suffix = uuid.uuid4().hex[:6]
    doomed = cluster.create(configmap(f"doomed-{suffix}"))
    keeper = cluster.create(configmap(f"keeper-{suffix}"))
    shared = configmap(
        f"shared-{suffix}", ownerReferences=owned_by(doomed, True) + owned_by(keeper, True)
    )
    cluster.create(shared)
    cluster.kubectl("delete", "configmap", f"doomed-{suffix}", "--cascade=foreground", WAIT)
    left = cluster.get("configmap", f"shared-{suffix}")
    assert left is not None
    assert [r["name"] for r in left["metadata"]["ownerReferences"]] == [f"keeper-{suffix}"]
