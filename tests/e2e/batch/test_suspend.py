"""spec.suspend and spec.managedBy against the real API server, webhook and controller."""

from __future__ import annotations

import json
from typing import Any

import pytest
from batch_helpers import get_json, wait_for

from localcluster.running import LocalCluster

pytestmark = pytest.mark.e2e


def _manifest(name: str, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "minAvailable": 2,
                "maxRetry": 3,
                **spec,
                "tasks": [
                    {
                        "name": "worker",
                        "replicas": 2,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "main", "image": "busybox"}],
                            }
                        },
                    }
                ],
            },
        }
    )


def _job(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    job: dict[str, Any] = get_json(cluster, "vcjob", name, "-n", namespace)
    return job


def _pods(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = get_json(cluster, "pods", "-n", namespace, "-l", f"volcano.sh/job-name={name}")
    return list(listed["items"])


def _suspended_condition(job: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (job.get("status") or {}).get("typedConditions") or []:
        if condition.get("type") == "Suspended":
            return dict(condition)
    return None


def _set_suspend(cluster: LocalCluster, namespace: str, name: str, value: bool) -> None:
    patch = json.dumps({"spec": {"suspend": value}})
    cluster.kubectl("patch", "vcjob", name, "-n", namespace, "--type", "merge", "-p", patch)


def _running_with_pods(cluster: LocalCluster, namespace: str, name: str) -> bool:
    job = _job(cluster, namespace, name)
    phase = ((job.get("status") or {}).get("state") or {}).get("phase")
    running = [p for p in _pods(cluster, namespace, name) if p["status"].get("phase") == "Running"]
    return phase == "Running" and len(running) == 2


def _suspended_without_pods(cluster: LocalCluster, namespace: str, name: str) -> bool:
    job = _job(cluster, namespace, name)
    state = (job.get("status") or {}).get("state") or {}
    condition = _suspended_condition(job) or {}
    return (
        state.get("reason") == "Suspended"
        and condition.get("status") == "True"
        and not _pods(cluster, namespace, name)
    )


def test_suspend_and_resume_ten_times_keeps_the_retry_count(
    cluster: LocalCluster, namespace: str
) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=_manifest("sus"))
    wait_for(lambda: _running_with_pods(cluster, namespace, "sus"), bool, "sus Running")
    first_pod_group = get_json(cluster, "podgroups.scheduling.volcano.sh", "-n", namespace)[
        "items"
    ][0]["metadata"]
    for round_ in range(10):
        _set_suspend(cluster, namespace, "sus", True)
        wait_for(
            lambda: _suspended_without_pods(cluster, namespace, "sus"),
            bool,
            f"sus suspended without pods (round {round_})",
        )
        _set_suspend(cluster, namespace, "sus", False)
        wait_for(
            lambda: _running_with_pods(cluster, namespace, "sus"),
            bool,
            f"sus Running again (round {round_})",
        )
    status = _job(cluster, namespace, "sus")["status"]
    assert status["retryCount"] == 0
    assert status["version"] == 0
    assert (_suspended_condition(_job(cluster, namespace, "sus")) or {})["reason"] == "JobResumed"
    # The gang was admitted afresh: the PodGroup of the first attempt was replaced.
    pod_groups = get_json(cluster, "podgroups.scheduling.volcano.sh", "-n", namespace)["items"]
    assert [g["metadata"]["uid"] for g in pod_groups] != [first_pod_group["uid"]]


def test_a_job_created_suspended_gets_no_pods_until_resumed(
    cluster: LocalCluster, namespace: str
) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=_manifest("later", suspend=True))
    wait_for(lambda: _suspended_without_pods(cluster, namespace, "later"), bool, "later suspended")
    _set_suspend(cluster, namespace, "later", False)
    wait_for(lambda: _running_with_pods(cluster, namespace, "later"), bool, "later Running")


def test_a_job_managed_by_another_controller_is_left_alone(
    cluster: LocalCluster, namespace: str
) -> None:
    other = _manifest("foreign", managedBy="example.com/other-controller")
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=other)
    # A job created afterwards is reconciled: the controller has seen the foreign one by then.
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=_manifest("ours"))
    wait_for(lambda: _running_with_pods(cluster, namespace, "ours"), bool, "ours Running")
    foreign = _job(cluster, namespace, "foreign")
    assert "status" not in foreign or not (foreign["status"].get("state") or {}).get("phase")
    assert _pods(cluster, namespace, "foreign") == []

    changed = cluster.kubectl(
        "patch", "vcjob", "foreign", "-n", namespace, "--type", "merge",
        "-p", json.dumps({"spec": {"managedBy": "example.com/another"}}),
        check=False,
    )  # fmt: skip
    assert changed.returncode != 0
    assert "spec.managedBy" in changed.stderr and "field is immutable" in changed.stderr
    unset = cluster.kubectl(
        "patch", "vcjob", "ours", "-n", namespace, "--type", "merge",
        "-p", json.dumps({"spec": {"managedBy": "example.com/other-controller"}}),
        check=False,
    )  # fmt: skip
    assert unset.returncode != 0 and "field is immutable" in unset.stderr
