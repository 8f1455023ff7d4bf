"""Cases from Volcano's admission and jobp suites that vcjob once failed, in our own words: a
JobFlow updated right after it is created (its JobTemplates not there yet), and Open queues
deleted as Volcano 1.14 deletes them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import yaml

from localcluster.running import LocalCluster
from tests.support import polling

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WAIT = 90.0


def get_json(cluster: LocalCluster, *what: str) -> Any:
    return json.loads(cluster.kubectl("get", *what, "-o", "json").stdout)


def flow_events(cluster: LocalCluster, namespace: str, flow: str) -> list[dict[str, Any]]:
    events = get_json(
        cluster,
        "events",
        "-n",
        namespace,
        "--field-selector",
        f"involvedObject.kind=JobFlow,involvedObject.name={flow}",
    )["items"]
    return [e for e in events if e.get("reason") == "JobTemplateNotFound"]


def test_a_flow_waiting_for_its_templates_can_be_updated_as_created(
    cluster: LocalCluster, namespace: str
) -> None:
    flow = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "grows", "namespace": namespace},
        "spec": {
            "jobRetainPolicy": "retain",
            "flows": [{"name": "fetch"}, {"name": "train", "dependsOn": {"targets": ["fetch"]}}],
        },
    }
    created = json.loads(
        cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(flow)).stdout
    )
    # The controller has looked at the flow twice (it retries a missing template every few
    # seconds), so whatever its first look wrote is written by now.
    polling.wait_for(
        lambda: flow_events(cluster, namespace, "grows"),
        lambda events: events and events[0].get("count", 1) >= 2,
        "two JobTemplateNotFound events on the flow",
        timeout=WAIT,
    )
    current = get_json(cluster, "jobflow", "grows", "-n", namespace)
    assert current["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert not current.get("status")
    # An update carrying the resourceVersion create returned is not a conflict.
    created["spec"]["flows"].append({"name": "report", "dependsOn": {"targets": ["train"]}})
    replaced = cluster.kubectl("replace", "-f", "-", input=yaml.safe_dump(created), check=False)
    assert replaced.returncode == 0, replaced.stderr
    steps = [f["name"] for f in get_json(cluster, "jf", "grows", "-n", namespace)["spec"]["flows"]]
    assert steps == ["fetch", "train", "report"]


def test_open_queues_are_deleted_as_volcano_deletes_them(cluster: LocalCluster) -> None:
    name = f"open-{uuid.uuid4().hex[:6]}"
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1},
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(queue))
    polling.wait_for(
        lambda: get_json(cluster, "queue", name).get("status", {}).get("state"),
        lambda state: state == "Open",
        f"queue {name} to be Open",
        timeout=WAIT,
    )
    deleted = cluster.kubectl("delete", "queue", name, "--wait=false", check=False)
    assert deleted.returncode == 0, deleted.stderr
    kept = cluster.kubectl("delete", "queue", "default", "--wait=false", check=False)
    assert kept.returncode != 0
    assert "`default` queue can not be deleted" in kept.stderr
    polling.wait_until(
        f"queue {name} to be gone",
        lambda: cluster.kubectl("get", "queue", name, check=False).returncode != 0,
        timeout=WAIT,
    )


def make_queue(name: str, parent: str | None = None, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1, **({"parent": parent} if parent else {}), **spec},
        }
    )


def test_child_queues_share_what_their_parent_has(cluster: LocalCluster) -> None:
    tag = uuid.uuid4().hex[:6]
    lab, team_a, team_b = f"lab-{tag}", f"team-a-{tag}", f"team-b-{tag}"
    cluster.kubectl(
        "create",
        "-f",
        "-",
        input=make_queue(lab, "root", deserved={"cpu": "4"}, capability={"cpu": "8"}),
    )
    polling.wait_until(
        f"the webhook's cache to know queue {lab}",
        lambda: (
            cluster.kubectl(
                "create", "--dry-run=server", "-f", "-", input=make_queue("probe", lab), check=False
            ).returncode
            == 0
        ),
        timeout=WAIT,
    )
    cluster.kubectl("create", "-f", "-", input=make_queue(team_a, lab, deserved={"cpu": "3"}))
    polling.wait_until(
        f"the webhook's cache to know queue {team_a}",
        lambda: (
            cluster.kubectl("delete", "queue", lab, "--dry-run=server", check=False).returncode != 0
        ),
        timeout=WAIT,
    )
    # A second child asking for more than the parent has left is refused, with the field.
    refused = cluster.kubectl(
        "create", "-f", "-", input=make_queue(team_b, lab, deserved={"cpu": "2"}), check=False
    )
    assert refused.returncode != 0
    assert "spec.deserved[cpu]" in refused.stderr
    assert f"parent queue {lab} validation failed: sum of children's deserved" in refused.stderr
    # The parent cannot shrink below what its children take, nor cap them below their caps.
    shrink = cluster.kubectl(
        "patch", "queue", lab, "--type=merge", "-p", '{"spec":{"deserved":{"cpu":"2"}}}',
        check=False,
    )  # fmt: skip
    assert shrink.returncode != 0
    assert f"queue {lab} validation failed: sum of children's deserved (cpu 3)" in shrink.stderr
    cluster.kubectl("create", "-f", "-", input=make_queue(team_b, lab, deserved={"cpu": "1"}))


def test_a_batch_job_podgroup_is_completed_once_its_pods_finished(
    cluster: LocalCluster, namespace: str
) -> None:
    """Volcano's scheduling suite: a Kubernetes Job of the `volcano` scheduler finishes, and its
    PodGroup (from the PodGroup controller) goes Completed, counted so by its queue."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "short", "namespace": namespace},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "metadata": {"annotations": {"sim.vcjob.io/runtime": "2s"}},
                "spec": {
                    "schedulerName": "volcano",
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "command": ["sh", "-c", "sleep 2"],
                            "resources": {"requests": {"cpu": "1"}},
                        }
                    ],
                },
            },
        },
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(job))
    uid = get_json(cluster, "job.batch", "short", "-n", namespace)["metadata"]["uid"]
    polling.wait_for(
        lambda: get_json(cluster, "job.batch", "short", "-n", namespace).get("status", {}),
        lambda status: status.get("succeeded") == 2,
        "the Job to succeed",
        timeout=WAIT,
    )
    group = polling.wait_for(
        lambda: get_json(
            cluster, "podgroups.scheduling.volcano.sh", f"podgroup-{uid}", "-n", namespace
        ),
        lambda g: (g.get("status") or {}).get("phase") == "Completed",
        "the PodGroup to be Completed",
        timeout=WAIT,
    )
    assert group["status"].get("succeeded") == 2
    polling.wait_until(
        "the default queue to count a completed PodGroup",
        lambda: (
            (get_json(cluster, "queue", "default").get("status") or {}).get("completed", 0) >= 1
        ),
        timeout=WAIT,
    )


def test_a_hierarchy_is_at_most_five_queues_deep(cluster: LocalCluster) -> None:
    tag = uuid.uuid4().hex[:6]
    parent = "root"
    for level in range(1, 6):
        name = f"level{level}-{tag}"
        polling.wait_until(
            f"queue {name} to be admitted under {parent}",
            lambda name=name, parent=parent: (
                cluster.kubectl(
                    "create", "-f", "-", input=make_queue(name, parent), check=False
                ).returncode
                == 0
            ),
            timeout=WAIT,
        )
        parent = name
    sixth = f"level6-{tag}"
    refused = polling.wait_for(
        lambda: cluster.kubectl("create", "-f", "-", input=make_queue(sixth, parent), check=False),
        lambda result: "failed to get parent queue" not in result.stderr,
        f"the webhook's cache to know queue {parent}",
        timeout=WAIT,
    )
    assert refused.returncode != 0
    assert f'spec.parent: Invalid value: "{parent}"' in refused.stderr
    assert f"queue {sixth} exceeds the maximum allowed depth of 5" in refused.stderr
