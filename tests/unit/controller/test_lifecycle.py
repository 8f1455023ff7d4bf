"""End-to-end runs of the planner against the in-memory world."""

from __future__ import annotations

from builders import World, created_pods, job

from shared import labels


def test_simple_job_runs_to_completed() -> None:
    world = World(job("j").task("w", replicas=2).build())
    first = world.step()
    assert world.phase == "Pending"
    assert [o["kind"] for o in first.create] == ["PodGroup"]
    assert created_pods(first) == []  # the gang gate: nothing before admission

    world.admit()
    second = world.step()
    assert created_pods(second) == ["j-w-0", "j-w-1"]
    assert second.guard_uid == world.job["metadata"]["uid"]
    assert world.status["pending"] == 2

    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    assert world.status["state"]["reason"] == "MinAvailableRunning"

    world.set_all("Succeeded")
    world.step()
    assert world.phase == "Completing"
    world.step()
    assert world.phase == "Completed"
    assert world.status["state"]["reason"] == "CompletionsReached"
    assert world.status["succeeded"] == 2  # difference 6: counters survive completion
    assert world.status["succeededIndexes"] == {"w": "0,1"}
    assert [c["status"] for c in world.status["conditions"]] == [
        "Pending",
        "Running",
        "Completing",
        "Completed",
    ]
    world.step()  # the terminal phase is written first, then the PodGroup goes
    assert world.pod_group is None
    assert world.pods["j-w-0"]["metadata"]["annotations"][labels.JOB_VERSION_KEY] == "0"


def test_restart_task_recreates_only_that_task() -> None:
    world = World(
        job("j")
        .task("ps")
        .task("worker", 2)
        .policy(event="PodFailed", action="RestartTask", task="worker")
        .build()
    )
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    ps_uid = world.pods["j-ps-0"]["metadata"]["uid"]
    worker_uids = {world.pods[n]["metadata"]["uid"] for n in ("j-worker-0", "j-worker-1")}
    world.set_pod("j-worker-1", "Failed", exit_code=2)
    world.step()
    assert world.phase == "Restarting"
    assert world.status["retryCount"] == 1  # the decision is written before any pod goes
    world.step()
    assert sorted(world.pods) == ["j-ps-0"]
    world.step()
    assert world.phase == "Pending"
    world.step()
    assert world.pods["j-ps-0"]["metadata"]["uid"] == ps_uid
    new = {world.pods[n]["metadata"]["uid"] for n in ("j-worker-0", "j-worker-1")}
    assert not new & worker_uids
    assert world.pods["j-worker-0"]["metadata"]["annotations"][labels.JOB_RETRY_COUNT_KEY] == "1"
    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    assert world.status["retryCount"] == 1
    assert world.status["version"] == 0


def test_restart_job_end_to_end_with_gang_readmission() -> None:
    world = World(job("j").task("w", 2).policy(event="PodFailed", action="RestartJob").build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    world.set_pod("j-w-0", "Failed", exit_code=1)
    world.step()
    assert world.phase == "Restarting"
    world.step()
    assert world.pods == {}
    assert world.pod_group is None
    world.step()
    assert world.phase == "Pending"
    world.step()
    assert world.pods == {}  # waiting for the new PodGroup to be admitted
    world.admit()
    world.step()
    assert sorted(world.pods) == ["j-w-0", "j-w-1"]
    assert world.pods["j-w-0"]["metadata"]["annotations"][labels.JOB_VERSION_KEY] == "1"
    world.set_all("Succeeded")
    world.settle(3)
    assert world.phase == "Completed"
    assert world.status["retryCount"] == 1
