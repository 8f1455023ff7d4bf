"""batch/v1 Jobs on the local cluster: the Job controller runs their pods through the simulator
to Complete or Failed, and the garbage collector removes the pods with the Job."""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster import testing
from localcluster.testing import LocalCluster, running_cluster

WAIT = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("jobs"), webhook=False, controller=False, nodes=1, pod_runtime="1s"
    ) as running:
        yield running


wait_for = functools.partial(testing.wait_for, timeout=WAIT)


def _job(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                **spec,
                "template": {
                    "metadata": {"annotations": annotations or {}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    },
                },
            },
        }
    )


def _get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", "-o", "json", *args).stdout)


def _conditions(job: dict[str, Any]) -> dict[str, str]:
    return {
        c["type"]: c.get("reason", "")
        for c in (job.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }


def test_a_job_runs_its_completions_and_completes(cluster: LocalCluster) -> None:
    name = f"pi-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "-f", "-", input=_job(name, completions=2, parallelism=1))
    job = wait_for(
        lambda: _get(cluster, "job", name),
        lambda j: "Complete" in _conditions(j),
        f"job {name} to complete",
    )
    status = job["status"]
    assert status["succeeded"] == 2
    assert "active" not in status and "failed" not in status
    assert status["startTime"] <= status["completionTime"]
    pods = _get(cluster, "pods", "-l", f"batch.kubernetes.io/job-name={name}")["items"]
    assert [p["status"]["phase"] for p in pods] == ["Succeeded", "Succeeded"]
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in pods} == {job["metadata"]["uid"]}
    table = cluster.kubectl("get", "jobs", name, "--no-headers").stdout.split()
    assert table[:3] == [name, "Complete", "2/2"]
    reasons = [
        e["reason"]
        for e in _get(cluster, "events", "--field-selector", f"involvedObject.name={name}")["items"]
    ]
    assert reasons.count("SuccessfulCreate") == 2
    assert "Completed" in reasons

    cluster.kubectl("delete", "job", name)
    wait_for(
        lambda: _get(cluster, "pods", "-l", f"batch.kubernetes.io/job-name={name}")["items"],
        lambda items: not items,
        f"the pods of job {name} to be collected",
    )


def test_a_job_whose_pods_fail_past_its_backoff_limit_fails(cluster: LocalCluster) -> None:
    name = f"fail-{uuid.uuid4().hex[:6]}"
    cluster.kubectl(
        "create",
        "-f",
        "-",
        input=_job(name, {"sim.vcjob.io/exit-code": "3"}, backoffLimit=1),
    )
    job = wait_for(
        lambda: _get(cluster, "job", name),
        lambda j: "Failed" in _conditions(j),
        f"job {name} to fail",
    )
    assert _conditions(job)["Failed"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 2
    assert "completionTime" not in job["status"]


def test_a_suspended_job_starts_no_pod(cluster: LocalCluster) -> None:
    name = f"held-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "-f", "-", input=_job(name, suspend=True))
    job = wait_for(
        lambda: _get(cluster, "job", name),
        lambda j: "Suspended" in _conditions(j),
        f"job {name} to be suspended",
    )
    assert "startTime" not in job["status"]
    assert not _get(cluster, "pods", "-l", f"batch.kubernetes.io/job-name={name}")["items"]
    cluster.kubectl("patch", "job", name, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    wait_for(
        lambda: _get(cluster, "job", name),
        lambda j: "Complete" in _conditions(j),
        f"job {name} to complete once resumed",
    )


def test_a_cronjob_starts_jobs_on_schedule(cluster: LocalCluster) -> None:
    name = f"tick-{uuid.uuid4().hex[:6]}"
    job_spec = json.loads(_job(name))["spec"]
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "@every 2s", "jobTemplate": {"spec": job_spec}},
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(cronjob))
    status = wait_for(
        lambda: _get(cluster, "cronjob", name).get("status") or {},
        lambda s: "lastSuccessfulTime" in s,
        f"a job of cronjob {name} to succeed",
    )
    assert status["lastScheduleTime"]
    jobs = [
        j
        for j in _get(cluster, "jobs")["items"]
        if (j["metadata"].get("ownerReferences") or [{}])[0].get("name") == name
    ]
    assert jobs
    assert all(j["metadata"]["name"].startswith(f"{name}-") for j in jobs)
    cluster.kubectl("delete", "cronjob", name)
    wait_for(
        lambda: [
            j
            for j in _get(cluster, "jobs")["items"]
            if (j["metadata"].get("ownerReferences") or [{}])[0].get("name") == name
        ],
        lambda left: not left,
        f"the jobs of cronjob {name} to be collected",
    )
