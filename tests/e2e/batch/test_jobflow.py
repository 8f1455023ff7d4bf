"""JobFlows on the local cluster, through kubectl, the webhook and the controller: a diamond
a → (b, c) → d runs in dependency order and Succeeds, a cyclic flow is denied with Volcano's
message, and jobRetainPolicy delete removes the flow's Jobs once it Succeeds."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import yaml
from batch_helpers import get_json, wait_for

from localcluster.running import LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FLOW_WAIT = 180.0


def template(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        # Pods of this cluster run ten minutes unless told otherwise.
                        "metadata": {"annotations": {"sim.vcjob.io/runtime": "2s"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "busybox"}],
                        },
                    },
                }
            ],
        },
    }


def jobflow(name: str, steps: dict[str, list[str]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": name},
        "spec": {
            "flows": [
                {"name": step, **({"dependsOn": {"targets": targets}} if targets else {})}
                for step, targets in steps.items()
            ],
            **spec,
        },
    }


def apply(cluster: LocalCluster, namespace: str, *objects: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(list(objects)))


def flow_phase(cluster: LocalCluster, namespace: str, name: str) -> str:
    flow = get_json(cluster, "jf", name, "-n", namespace)
    return str(((flow.get("status") or {}).get("state") or {}).get("phase") or "")


def stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_a_diamond_runs_in_dependency_order(cluster: LocalCluster, namespace: str) -> None:
    steps = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
    apply(cluster, namespace, *(template(n) for n in steps))
    apply(cluster, namespace, jobflow("diamond", steps))
    wait_for(
        lambda: flow_phase(cluster, namespace, "diamond"),
        lambda phase: phase == "Succeed",
        "the flow to succeed",
        timeout=FLOW_WAIT,
    )
    jobs = {j["metadata"]["name"]: j for j in get_json(cluster, "vcjob", "-n", namespace)["items"]}
    assert sorted(jobs) == ["diamond-a", "diamond-b", "diamond-c", "diamond-d"]
    for step, targets in steps.items():
        job = jobs[f"diamond-{step}"]
        assert job["metadata"]["labels"]["volcano.sh/createdByJobFlow"] == f"{namespace}.diamond"
        (owner,) = job["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"]) == ("JobFlow", "diamond")
        # Created only once every target had completed.
        created = stamp(job["metadata"]["creationTimestamp"])
        for target in targets:
            state = jobs[f"diamond-{target}"]["status"]["state"]
            assert state["phase"] == "Completed"
            assert created >= stamp(state["lastTransitionTime"]), (step, target)
    status = get_json(cluster, "jf", "diamond", "-n", namespace)["status"]
    assert sorted(status["completedJobs"]) == sorted(jobs)
    assert sorted(e["name"] for e in status["jobStatusList"]) == sorted(jobs)
    assert all(status["conditions"][name]["phase"] == "Completed" for name in jobs)
    # kubectl's short names and the JobFlow's printer column.
    table = cluster.kubectl("get", "jf", "-n", namespace).stdout.split()
    assert table[:3] == ["NAME", "STATUS", "AGE"] and table[3:5] == ["diamond", "Succeed"]
    names = cluster.kubectl("get", "jt", "-n", namespace, "-o", "name").stdout.split()
    assert sorted(names) == [f"jobtemplate.flow.volcano.sh/{n}" for n in "abcd"]
    wait_for(
        lambda: get_json(cluster, "jt", "a", "-n", namespace).get("status") or {},
        lambda s: s.get("jobDependsOnList") == ["diamond-a"],
        "the template's jobDependsOnList",
    )


def test_a_cyclic_flow_is_denied(cluster: LocalCluster, namespace: str) -> None:
    cyclic = jobflow("cyclic", {"a": ["c"], "b": ["a"], "c": ["b"]})
    result = cluster.kubectl(
        "create", "-n", namespace, "-f", "-", input=yaml.safe_dump(cyclic), check=False
    )
    assert result.returncode != 0
    assert "jobflow Flow is not DAG" in result.stderr
    assert "spec.flows[0].dependsOn.targets[0]" in result.stderr
    missing = jobflow("missing", {"b": ["a"]})
    result = cluster.kubectl(
        "create", "-n", namespace, "-f", "-", input=yaml.safe_dump(missing), check=False
    )
    assert result.returncode != 0
    assert "jobflow Flow is not DAG: vertex is not defined: a" in result.stderr
    assert cluster.kubectl("get", "jf", "-n", namespace, "-o", "name").stdout.strip() == ""


def test_retain_policy_delete_removes_the_jobs(cluster: LocalCluster, namespace: str) -> None:
    steps = {"first": [], "second": ["first"]}
    apply(cluster, namespace, *(template(n) for n in steps))
    apply(cluster, namespace, jobflow("tidy", steps, jobRetainPolicy="delete"))
    wait_for(
        lambda: flow_phase(cluster, namespace, "tidy"),
        lambda phase: phase == "Succeed",
        "the flow to succeed",
        timeout=FLOW_WAIT,
    )
    wait_for(
        lambda: get_json(cluster, "vcjob", "-n", namespace)["items"],
        lambda items: items == [],
        "the flow's Jobs to be deleted",
    )
    status = get_json(cluster, "jf", "tidy", "-n", namespace)["status"]
    assert status["state"]["phase"] == "Succeed"
    assert sorted(status["completedJobs"]) == ["tidy-first", "tidy-second"]


def test_a_dependency_on_failed_runs_the_cleanup_branch_with_a_patch(
    cluster: LocalCluster, namespace: str
) -> None:
    failing = template("work")
    pod = failing["spec"]["tasks"][0]["template"]
    pod["metadata"]["annotations"]["sim.vcjob.io/exit-code"] = "1"
    flow = jobflow("guarded", {"work": [], "report": ["work"], "cleanup": ["work"]})
    cleanup = flow["spec"]["flows"][2]
    cleanup["dependsOn"]["phases"] = ["Failed"]
    # The cleanup Job is the template with two replicas instead of one.
    cleanup["patch"] = {"jobSpec": {"tasks": [{"name": "main", "replicas": 2}]}}
    apply(cluster, namespace, failing, template("report"), template("cleanup"))
    apply(cluster, namespace, flow)
    wait_for(
        lambda: flow_phase(cluster, namespace, "guarded"),
        lambda phase: phase == "Succeed",
        "the flow to succeed through its cleanup branch",
        timeout=FLOW_WAIT,
    )
    jobs = {j["metadata"]["name"]: j for j in get_json(cluster, "vcjob", "-n", namespace)["items"]}
    assert sorted(jobs) == ["guarded-cleanup", "guarded-work"]
    assert jobs["guarded-work"]["status"]["state"]["phase"] == "Failed"
    assert jobs["guarded-cleanup"]["status"]["state"]["phase"] == "Completed"
    assert jobs["guarded-cleanup"]["spec"]["tasks"][0]["replicas"] == 2
    status = get_json(cluster, "jf", "guarded", "-n", namespace)["status"]
    assert status["failedJobs"] == ["guarded-work"]
    assert status["completedJobs"] == ["guarded-cleanup"]
