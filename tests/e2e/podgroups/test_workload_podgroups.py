"""The PodGroup controller on the real control plane: a Deployment, a bare pod and a batch Job of
the `volcano` scheduler get Volcano's PodGroups, which follow scale up, down and to zero and go
with their owner."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcluster.running import LocalCluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e

WAIT = 90.0


def get_json(cluster: LocalCluster, namespace: str, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", "-n", namespace, *args, "-o", "json").stdout)


def podgroups(cluster: LocalCluster, namespace: str) -> dict[str, dict[str, Any]]:
    items = get_json(cluster, namespace, "podgroups.scheduling.volcano.sh")["items"]
    return {g["metadata"]["name"]: g for g in items}


def template(labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels, "annotations": annotations or {}},
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }


def apply(cluster: LocalCluster, namespace: str, manifest: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(manifest))


def test_deployment_podgroup_follows_scale_and_goes_with_the_deployment(
    cluster: LocalCluster, namespace: str
) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "annotations": {
                "scheduling.volcano.sh/group-min-member": "2",
                "volcano.sh/preemptable": "false",
            },
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template({"app": "web"}, {"scheduling.volcano.sh/queue-name": "default"}),
        },
    }
    apply(cluster, namespace, deployment)
    (rs,) = wait_for(
        lambda: get_json(cluster, namespace, "replicasets")["items"], bool, "the ReplicaSet"
    )
    name = f"podgroup-{rs['metadata']['uid']}"

    def group_running(groups: dict[str, dict[str, Any]]) -> bool:
        return (groups.get(name, {}).get("status") or {}).get("phase") == "Running"

    groups = wait_for(
        lambda: podgroups(cluster, namespace),
        group_running,
        "the Deployment's PodGroup to run",
        WAIT,
    )
    group = groups[name]
    assert group["spec"]["minMember"] == 2
    assert group["spec"]["queue"] == "default"
    assert group["spec"]["minResources"]["cpu"] == "2"
    assert group["metadata"]["annotations"]["volcano.sh/preemptable"] == "false"
    (owner,) = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "ReplicaSet",
        rs["metadata"]["name"],
        rs["metadata"]["uid"],
    )
    # Every pod names the group.
    wait_for(
        lambda: get_json(cluster, namespace, "pods", "-l", "app=web")["items"],
        lambda pods: (
            len(pods) == 2
            and all(
                p["metadata"]["annotations"].get("scheduling.k8s.io/group-name") == name
                for p in pods
            )
        ),
        "both pods to name the PodGroup",
    )

    cluster.kubectl("scale", "-n", namespace, "deployment/web", "--replicas=3")
    wait_for(
        lambda: podgroups(cluster, namespace),
        lambda gs: (gs.get(name, {}).get("status") or {}).get("running") == 3,
        "three running members",
        WAIT,
    )
    assert list(podgroups(cluster, namespace)) == [name]

    cluster.kubectl("scale", "-n", namespace, "deployment/web", "--replicas=0")
    wait_for(
        lambda: podgroups(cluster, namespace), lambda gs: name not in gs, "no PodGroup at zero"
    )

    cluster.kubectl("scale", "-n", namespace, "deployment/web", "--replicas=1")
    wait_for(
        lambda: podgroups(cluster, namespace), lambda gs: name in gs, "the PodGroup back at one"
    )

    cluster.kubectl("delete", "-n", namespace, "deployment/web")
    wait_for(lambda: podgroups(cluster, namespace), lambda gs: not gs, "the PodGroup gone", WAIT)


def test_rollout_moves_the_podgroup_to_the_new_replicaset(
    cluster: LocalCluster, namespace: str
) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "roll"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "roll"}},
            "template": template({"app": "roll"}),
        },
    }
    apply(cluster, namespace, deployment)
    (first,) = wait_for(lambda: podgroups(cluster, namespace), bool, "the first PodGroup")
    cluster.kubectl("set", "env", "-n", namespace, "deployment/roll", "ROLLOUT=2", "-c", "main")

    def only_the_new_group(groups: dict[str, dict[str, Any]]) -> bool:
        replicasets = get_json(cluster, namespace, "replicasets")["items"]
        current = [r for r in replicasets if r["spec"]["replicas"] > 0]
        return [f"podgroup-{r['metadata']['uid']}" for r in current] == list(groups) and (
            first not in groups
        )

    wait_for(
        lambda: podgroups(cluster, namespace),
        only_the_new_group,
        "the new ReplicaSet's group",
        WAIT,
    )


def test_bare_pod_batch_job_and_replication_controller_get_their_podgroups(
    cluster: LocalCluster, namespace: str
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"}}
    pod.update(template({"app": "bare"}))
    pod["metadata"]["name"] = "bare"
    apply(cluster, namespace, pod)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "batch",
            "annotations": {"scheduling.volcano.sh/group-min-member": "2"},
        },
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                **template({"app": "batch"}),
                "spec": {**template({})["spec"], "restartPolicy": "Never"},
            },
        },
    }
    apply(cluster, namespace, job)
    # Volcano's jobp suite: a ReplicationController's pod gets a PodGroup that runs.
    controller = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc-volcano"},
        "spec": {"replicas": 1, "selector": {"app": "rc"}, "template": template({"app": "rc"})},
    }
    apply(cluster, namespace, controller)
    bare_uid = get_json(cluster, namespace, "pod", "bare")["metadata"]["uid"]
    job_uid = get_json(cluster, namespace, "job.batch", "batch")["metadata"]["uid"]
    rc_uid = get_json(cluster, namespace, "rc", "rc-volcano")["metadata"]["uid"]
    groups = wait_for(
        lambda: podgroups(cluster, namespace),
        lambda gs: (
            {f"podgroup-{bare_uid}", f"podgroup-{job_uid}"} <= set(gs)
            and (gs.get(f"podgroup-{rc_uid}", {}).get("status") or {}).get("phase") == "Running"
        ),
        "the three PodGroups, the ReplicationController's Running",
        WAIT,
    )
    assert groups[f"podgroup-{rc_uid}"]["metadata"]["ownerReferences"][0]["kind"] == (
        "ReplicationController"
    )
    bare = groups[f"podgroup-{bare_uid}"]
    assert bare["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    assert bare["spec"]["minMember"] == 1
    batch = groups[f"podgroup-{job_uid}"]
    assert batch["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert batch["spec"]["minMember"] == 2

    cluster.kubectl("delete", "-n", namespace, "pod/bare", "rc/rc-volcano", "--wait=false")
    cluster.kubectl(
        "delete", "-n", namespace, "job.batch/batch", "--cascade=foreground", "--wait=false"
    )
    wait_for(lambda: podgroups(cluster, namespace), lambda gs: not gs, "the PodGroups gone", WAIT)


def test_pods_of_other_schedulers_or_with_a_group_get_none(
    cluster: LocalCluster, namespace: str
) -> None:
    other = {"apiVersion": "v1", "kind": "Pod", **template({"app": "other"})}
    other["metadata"]["name"] = "other"
    other["spec"]["schedulerName"] = "default-scheduler"
    apply(cluster, namespace, other)
    grouped = {"apiVersion": "v1", "kind": "Pod", **template({"app": "grouped"})}
    grouped["metadata"]["name"] = "grouped"
    grouped["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "mine"
    apply(cluster, namespace, grouped)
    # A marker pod created after them: once its group exists, the others were seen too.
    marker = {"apiVersion": "v1", "kind": "Pod", **template({"app": "marker"})}
    marker["metadata"]["name"] = "marker"
    apply(cluster, namespace, marker)
    uid = get_json(cluster, namespace, "pod", "marker")["metadata"]["uid"]
    groups = wait_for(
        lambda: podgroups(cluster, namespace), lambda gs: bool(gs), "the marker's PodGroup"
    )
    assert list(groups) == [f"podgroup-{uid}"]
