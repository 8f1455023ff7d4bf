"""Job lifecycles end to end through the API: the controller in-process, the test as kubelet."""

from __future__ import annotations

from typing import Any

import pytest

Kubelet = Any
pytestmark = pytest.mark.slow


def pod_uids(kubelet: Kubelet, job: str) -> dict[str, str]:
    return {n: p["metadata"]["uid"] for n, p in kubelet.pods(job).items()}


def test_a_job_runs_and_completes(kubelet: Kubelet, job_name: str) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 2)]))
    kubelet.wait("both pods", lambda: len(kubelet.pods(job_name)) == 2)
    assert sorted(kubelet.pods(job_name)) == [f"{job_name}-worker-0", f"{job_name}-worker-1"]
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    kubelet.run_all(job_name, "Succeeded")
    kubelet.wait("Completed", lambda: kubelet.phase(job_name) == "Completed")
    status = kubelet.job(job_name)["status"]
    assert status["succeeded"] == 2
    assert status["retryCount"] in (0, None)


def test_a_failed_pod_restarts_the_job(kubelet: Kubelet, job_name: str) -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 2)], policies=policies))
    kubelet.wait("both pods", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    before = pod_uids(kubelet, job_name)
    kubelet.set_phase(f"{job_name}-worker-0", "Failed", exit_code=3)
    kubelet.wait(
        "every pod recreated",
        lambda: (
            (now := pod_uids(kubelet, job_name)).keys() == before.keys()
            and not set(now.values()) & set(before.values())
        ),
    )
    status = kubelet.job(job_name)["status"]
    assert status["retryCount"] == 1
    assert status["version"] >= 1
    kubelet.run_all(job_name)
    kubelet.wait("Running again", lambda: kubelet.phase(job_name) == "Running")


def test_a_job_that_keeps_failing_ends_failed(kubelet: Kubelet, job_name: str) -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob"}]
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 1)], max_retry=2, policies=policies))
    for _ in range(3):
        if kubelet.phase(job_name) == "Failed":
            break
        pod = kubelet.wait("a live pod", lambda: kubelet.pods(job_name))
        name = next(iter(pod))
        kubelet.set_phase(name, "Running")
        kubelet.set_phase(name, "Failed", exit_code=1)
        kubelet.wait(
            "a restart or the end",
            lambda n=name, uid=pod[name]["metadata"]["uid"]: (
                kubelet.phase(job_name) == "Failed"
                or pod_uids(kubelet, job_name).get(n, uid) != uid
            ),
        )
    kubelet.wait("Failed", lambda: kubelet.phase(job_name) == "Failed")
    status = kubelet.job(job_name)["status"]
    assert status["state"]["reason"] == "MaxRetryExceeded"
    assert status["retryCount"] == 2


def test_a_job_scales_up_and_down_in_place(kubelet: Kubelet, job_name: str) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 2)], minAvailable=1))
    kubelet.wait("2 pods", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    first = pod_uids(kubelet, job_name)
    task = kubelet.job(job_name)["spec"]["tasks"][0]
    kubelet.patch_job(job_name, {"spec": {"tasks": [{**task, "replicas": 4, "minAvailable": 1}]}})
    kubelet.wait("4 pods", lambda: len(kubelet.pods(job_name)) == 4)
    assert {n: u for n, u in pod_uids(kubelet, job_name).items() if n in first} == first
    kubelet.run_all(job_name)
    kubelet.patch_job(job_name, {"spec": {"tasks": [{**task, "replicas": 1, "minAvailable": 1}]}})
    kubelet.wait("1 pod", lambda: sorted(kubelet.pods(job_name)) == [f"{job_name}-worker-0"])
    assert pod_uids(kubelet, job_name)[f"{job_name}-worker-0"] == first[f"{job_name}-worker-0"]
    assert kubelet.phase(job_name) == "Running"


def test_a_success_policy_completes_the_job(kubelet: Kubelet, job_name: str) -> None:
    body = kubelet.make_job(
        job_name,
        [("master", 1), ("worker", 3)],
        successPolicy={"rules": [{"taskName": "master", "succeededIndexes": "0"}]},
    )
    kubelet.create_job(body)
    kubelet.wait("4 pods", lambda: len(kubelet.pods(job_name)) == 4)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    kubelet.set_phase(f"{job_name}-master-0", "Succeeded")
    kubelet.wait("Completed", lambda: kubelet.phase(job_name) == "Completed")
    state = kubelet.job(job_name)["status"]["state"]
    assert state["reason"] == "SuccessPolicy"
    assert list(kubelet.pods(job_name)) == [f"{job_name}-master-0"], "workers were stopped"


def test_suspend_and_resume_three_times_keeps_the_retry_budget(
    kubelet: Kubelet, job_name: str
) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 2)], max_retry=3))
    for round_ in range(3):
        kubelet.wait(f"pods (round {round_})", lambda: len(kubelet.pods(job_name)) == 2)
        kubelet.run_all(job_name)
        kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
        kubelet.vcjob("suspend", "-n", "default", job_name)
        kubelet.wait("Aborted", lambda: kubelet.phase(job_name) == "Aborted")
        assert kubelet.pods(job_name) == {}
        kubelet.vcjob("resume", "-n", "default", job_name)
        kubelet.wait(
            "resumed", lambda: kubelet.phase(job_name) in ("Restarting", "Pending", "Running")
        )
    kubelet.wait("pods after the last resume", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    assert kubelet.job(job_name)["status"].get("retryCount", 0) == 0


def test_a_deleted_succeeded_pod_is_not_run_again(kubelet: Kubelet, job_name: str) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 2)]))
    kubelet.wait("2 pods", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    done = f"{job_name}-worker-0"
    kubelet.set_phase(done, "Succeeded")
    kubelet.wait(
        "index 0 recorded",
        lambda: (
            (kubelet.job(job_name)["status"].get("succeededIndexes") or {}).get("worker") == "0"
        ),
    )
    kubelet.cluster.kubectl("delete", "pod", done, "--wait=false")
    kubelet.wait("the pod is gone", lambda: done not in kubelet.pods(job_name))
    kubelet.hold("not recreated", lambda: done not in kubelet.pods(job_name), job_name)
    kubelet.set_phase(f"{job_name}-worker-1", "Succeeded")
    kubelet.wait("Completed", lambda: kubelet.phase(job_name) == "Completed")


def test_pods_wait_for_the_gang_to_be_admitted(kubelet: Kubelet, job_name: str) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 3)], scheduler="volcano"))
    kubelet.wait("the PodGroup", lambda: kubelet.pod_group(job_name))
    kubelet.hold("no pods before admission", lambda: not kubelet.pods(job_name), job_name)
    kubelet.admit(job_name)
    kubelet.wait("3 pods", lambda: len(kubelet.pods(job_name)) == 3)
    group = kubelet.pod_group(job_name)
    assert group["spec"]["minMember"] == 3
