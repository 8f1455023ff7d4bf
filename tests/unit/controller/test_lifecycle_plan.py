"""The lifecycle extensions through the planner, against the in-memory world: the deadline,
retry budgets by cause with backoff, attempts, and Volcano's behaviour without the new fields."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from builders import World, job, plan_for, pod_of

from shared import labels


def running(world: World) -> None:
    """Step until the job runs (admitting its PodGroup and starting its pods as they come)."""
    for _ in range(20):
        if world.phase == "Running":
            return
        if world.pod_group is not None:
            world.admit("Running")
        world.set_all("Running")
        world.step()
    raise AssertionError(f"the job did not run: {world.phase}")


def evicting(**spec: Any) -> World:
    built = job("j").task("w", 2).policy(event="PodEvicted", action="RestartJob").max_retry(1)
    j = built.build()
    j["spec"].update(spec)
    return World(j)


def test_the_deadline_fails_a_running_job_and_deletes_its_pods() -> None:
    j = job("j").task("w", 2).build()
    j["spec"]["activeDeadlineSeconds"] = 30
    world = World(j)
    running(world)
    started = world.status["startTime"]
    plan = world.step(timedelta(seconds=20))
    assert world.phase == "Running"
    assert plan.requeue_after is not None and plan.requeue_after <= timedelta(seconds=10)
    plan = world.step(timedelta(seconds=10))
    assert world.phase == "Failed"
    assert world.status["state"]["reason"] == "DeadlineExceeded"
    assert world.status["reason"] == "DeadlineExceeded"
    assert any(e.reason == "DeadlineExceeded" and e.type == "Warning" for e in plan.events)
    failed = next(c for c in world.status["typedConditions"] if c["type"] == "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "DeadlineExceeded")
    world.step()
    assert world.pods == {}
    assert world.status["startTime"] == started


def test_time_suspended_does_not_count_toward_the_deadline() -> None:
    j = job("j").task("w", 1).build()
    j["spec"]["activeDeadlineSeconds"] = 30
    world = World(j)
    running(world)
    world.step(timedelta(seconds=10))  # 10 s+ of the 30 used
    world.command("AbortJob", "suspend")
    world.settle()
    assert world.phase == "Aborted"
    world.step(timedelta(seconds=300))  # suspended: the clock stands still
    assert world.phase == "Aborted"
    world.command("ResumeJob", "resume")
    world.settle(3)
    running(world)
    assert world.status["suspendedSeconds"] >= 300
    world.step(timedelta(seconds=5))
    assert world.phase == "Running"
    world.step(timedelta(seconds=15))
    assert world.phase == "Failed"
    assert world.status["state"]["reason"] == "DeadlineExceeded"


def test_volcano_without_retry_policy_an_eviction_uses_up_max_retry_1() -> None:
    world = evicting()
    running(world)
    world.evict("j-w-0")
    world.settle(3)
    assert world.phase == "Failed"
    assert world.status["state"]["reason"] == "MaxRetryExceeded"
    assert world.status["retryCount"] == 1
    assert world.status["restartCounts"]["infrastructure"] == 1


def test_evictions_use_the_infrastructure_budget_not_max_retry() -> None:
    world = evicting(retryPolicy={"infrastructureRetries": 5})
    for n in range(1, 6):
        running(world)
        world.evict("j-w-0")
        world.settle(3)
        assert world.phase != "Failed", n
        assert world.status["retryCount"] == 0
        assert world.status["restartCounts"] == {
            "application": 0,
            "infrastructure": n,
            "operator": 0,
        }
    running(world)
    assert [a["cause"] for a in world.status["attempts"][:-1]] == ["Infrastructure"] * 5
    assert world.pods["j-w-0"]["metadata"]["annotations"][labels.ATTEMPT_KEY] == "5"
    env = world.pods["j-w-1"]["spec"]["containers"][0]["env"]
    assert {"name": labels.ATTEMPT_ENV, "value": "5"} in env
    world.evict("j-w-1")  # the sixth
    world.settle(3)
    assert world.phase == "Failed"
    assert world.status["state"]["reason"] == "InfrastructureRetriesExceeded"


def test_an_application_failure_still_uses_max_retry() -> None:
    j = job("j").task("w", 2).policy(event="PodFailed", action="RestartJob").max_retry(2).build()
    j["spec"]["retryPolicy"] = {"infrastructureRetries": 5}
    world = World(j)
    running(world)
    world.set_pod("j-w-0", "Failed", exit_code=3)
    world.settle(3)
    assert world.status["retryCount"] == 1
    assert world.status["restartCounts"]["application"] == 1
    assert world.status["attempts"][0]["failedPods"] == [{"name": "j-w-0", "exitCode": 3}]


def test_operator_restarts_count_only_without_retry_policy() -> None:
    for spec, retries in (({}, 1), ({"retryPolicy": {}}, 0)):
        j = job("j").task("w", 1).max_retry(3).build()
        j["spec"].update(spec)
        world = World(j)
        running(world)
        world.command("RestartJob")
        world.settle(3)
        assert world.status["retryCount"] == retries, spec
        assert world.status["restartCounts"]["operator"] == 1


def test_backoff_holds_the_pods_back_and_grows() -> None:
    world = evicting(
        retryPolicy={"infrastructureRetries": 5, "backoff": {"baseSeconds": 4, "capSeconds": 60}}
    )
    waits = []
    for _ in range(3):
        running(world)
        world.evict("j-w-0")
        world.settle(3)  # decided, pods and PodGroup gone: now the backoff
        assert world.phase == "Restarting"
        backoff = world.status["attempts"][-1]["backoffSeconds"]
        waited = 0
        while world.phase == "Restarting":
            world.step()
            waited += 1
        waits.append((backoff, waited))
    backoffs = [b for b, _ in waits]
    assert backoffs == sorted(backoffs) and len(set(backoffs)) == 3
    for backoff, waited in waits:
        assert waited >= int(backoff) - 3  # settle(3) already stepped 3 s of it


def test_a_job_that_can_never_run_fails_fast_with_the_reason() -> None:
    long_name = "n" * 60
    cases = [
        (job(long_name).task("worker", 2).plugin("svc").build(), "NameTooLong"),
        (job("j").task("w", 1).plugin("svc", "--no-such-flag").build(), "InvalidPluginConfig"),
        (job("j").task("w", 1).plugin("ray", "--head=absent").build(), "InvalidPluginConfig"),
    ]
    for built, reason in cases:
        world = World(built)
        world.step()  # Pending first
        plan = world.step()
        assert world.phase == "Failed", reason
        assert world.status["state"]["reason"] == reason
        assert world.status["reason"] == reason
        assert any(e.type == "Warning" and e.reason == reason for e in plan.events)
        assert world.pods == {}


def test_a_long_name_without_the_svc_plugin_still_runs() -> None:
    world = World(job("n" * 60).task("worker", 2).build())
    running(world)
    assert world.phase == "Running"


def test_a_job_completing_past_its_deadline_still_completes() -> None:
    j = job("j").task("w", 1).phase("Completing", startTime="2026-01-01T11:00:00Z").build()
    j["spec"]["activeDeadlineSeconds"] = 30
    plan = plan_for(j, [pod_of(j, "w", 0, phase="Running", deleting=True)])
    assert plan.status is not None
    assert plan.status["state"]["phase"] == "Completing"
    assert not any(e.reason == "DeadlineExceeded" for e in plan.events)
    running_job = job("j").task("w", 1).phase("Running", startTime="2026-01-01T11:00:00Z").build()
    running_job["spec"]["activeDeadlineSeconds"] = 30
    plan = plan_for(running_job, [pod_of(running_job, "w", 0)])
    assert plan.status is not None
    assert plan.status["state"]["reason"] == "DeadlineExceeded"
