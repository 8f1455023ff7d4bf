"""Status bookkeeping, the gang gate, dependsOn, TTL and terminal clean-up."""

from __future__ import annotations

from datetime import timedelta

from builders import T0, World, created_pods, job, plan_for, pod_group_of, pod_of

from controller.job.decide.model import PlanSettings


def test_status_shape_after_the_first_reconcile() -> None:
    plan = plan_for(job("j").task("w", 2).build(), pod_group=None)
    assert plan.status is not None
    assert plan.status == {
        "state": {
            "phase": "Pending",
            "reason": "JobCreated",
            "message": "the job was accepted and waits for its pods",
            "lastTransitionTime": "2026-01-01T12:00:00Z",
        },
        "minAvailable": 2,
        "pending": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "terminating": 0,
        "unknown": 0,
        "version": 0,
        "retryCount": 0,
        "taskStatusCount": {},
        "succeededIndexes": {},
        "controlledResources": {},
        "conditions": [{"status": "Pending", "lastTransitionTime": "2026-01-01T12:00:00Z"}],
        # vcjob's lifecycle fields beside Volcano's (docs/lifecycle.md).
        "restartCounts": {"application": 0, "infrastructure": 0, "operator": 0},
        "attempts": [{"index": 0, "startTime": "2026-01-01T12:00:00Z"}],
        "typedConditions": [
            {
                "type": "Admitted",
                "status": "False",
                "reason": "Waiting",
                "message": "the job waits for the scheduler to admit it",
                "lastTransitionTime": "2026-01-01T12:00:00Z",
                "observedGeneration": 1,
            },
            {
                "type": "Running",
                "status": "False",
                "reason": "Pending",
                "message": "the job was accepted and waits for its pods",
                "lastTransitionTime": "2026-01-01T12:00:00Z",
                "observedGeneration": 1,
            },
            {
                "type": "Blocked",
                "status": "False",
                "reason": "NotBlocked",
                "message": "nothing blocks the job",
                "lastTransitionTime": "2026-01-01T12:00:00Z",
                "observedGeneration": 1,
            },
        ],
    }


def test_the_first_event_names_the_phase_a_new_job_starts_in() -> None:
    plan = plan_for(job("j").task("w", 2).build(), pod_group=None)
    first = plan.events[0]
    assert (first.reason, first.message) == (
        "JobCreated",
        "job phase Pending: the job was accepted and waits for its pods",
    )


def test_an_unchanged_job_writes_no_status() -> None:
    world = World(job("j").task("w", 2).build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    plan = world.step()
    assert plan.status is None
    assert plan.create == []
    assert plan.delete == []


def test_counters_and_task_status_count() -> None:
    j = job("j").task("a", 2).task("b", 3).phase("Running").build()
    pods = [
        pod_of(j, "a", 0),
        pod_of(j, "a", 1, phase="Pending"),
        pod_of(j, "b", 0, phase="Succeeded"),
        pod_of(j, "b", 1, phase="Failed"),
        pod_of(j, "b", 2, deleting=True),
    ]
    plan = plan_for(j, pods)
    assert plan.status is not None
    status = plan.status
    counts = [status[k] for k in ("pending", "running", "succeeded", "failed", "terminating")]
    assert counts == [1, 1, 1, 1, 1]
    assert status["taskStatusCount"] == {
        "a": {"phase": {"Pending": 1, "Running": 1}},
        "b": {"phase": {"Failed": 1, "Succeeded": 1}},
    }
    assert status["succeededIndexes"] == {"b": "0"}


def test_conditions_one_entry_per_phase_most_recent_last() -> None:
    world = World(job("j").task("w").build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    world.command("RestartJob")
    world.settle(3)
    phases = [c["status"] for c in world.status["conditions"]]
    assert phases == ["Running", "Restarting", "Pending"]
    assert (
        world.status["conditions"][-1]["lastTransitionTime"]
        == world.status["state"]["lastTransitionTime"]
    )


def test_non_gang_scheduler_creates_pods_at_once() -> None:
    j = job("j").task("w", 2).scheduler("default-scheduler").build()
    plan = plan_for(j, pod_group=None)
    assert [o["kind"] for o in plan.create] == ["PodGroup", "Pod", "Pod"]


def test_gang_gate_waits_for_inqueue() -> None:
    j = job("j").task("w", 2).phase("Pending").build()
    assert created_pods(plan_for(j, pod_group=pod_group_of(j, "Pending"))) == []
    assert created_pods(plan_for(j, pod_group=pod_group_of(j, "Inqueue"))) == ["j-w-0", "j-w-1"]
    gangs = PlanSettings(gang_schedulers=frozenset({"kube-batch"}))
    assert created_pods(plan_for(j, pod_group=pod_group_of(j, "Pending"), settings=gangs)) == [
        "j-w-0",
        "j-w-1",
    ]


def test_full_restart_recreates_the_pod_group_and_waits_for_admission() -> None:
    world = World(job("j").task("w", 2).build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    old = world.pod_group
    assert old is not None
    world.command("RestartJob")
    world.step()  # the decision
    world.step()  # its effects
    assert world.pod_group is None
    # a stale cache still shows the old, admitted group: it must not open the gate
    world.pod_group = old
    stale = world.step()
    assert created_pods(stale) == []
    assert world.phase == "Restarting"
    world.pod_group = None
    world.step()
    assert world.phase == "Pending"
    fresh = world.step()
    assert [o["kind"] for o in fresh.create] == ["PodGroup"]
    world.admit()
    assert created_pods(world.step()) == ["j-w-0", "j-w-1"]
    assert world.status["version"] == 1


def test_depends_on_waits_for_the_dependency() -> None:
    j = job("j").task("master").task("worker", 2, depends_on=["master"]).phase("Pending").build()
    assert created_pods(plan_for(j)) == ["j-master-0"]
    pending = plan_for(j, [pod_of(j, "master", 0, phase="Pending")])
    assert created_pods(pending) == []
    ready = plan_for(j, [pod_of(j, "master", 0, phase="Running")])
    assert created_pods(ready) == ["j-worker-0", "j-worker-1"]
    not_ready = plan_for(j, [pod_of(j, "master", 0, phase="Running", ready=False)])
    assert created_pods(not_ready) == []


def test_depends_on_any() -> None:
    j = (
        job("j")
        .task("a")
        .task("b")
        .task("c", depends_on=["a", "b"], iteration="any")
        .phase("Pending")
        .build()
    )
    plan = plan_for(j, [pod_of(j, "a", 0, phase="Succeeded"), pod_of(j, "b", 0, phase="Pending")])
    assert created_pods(plan) == ["j-c-0"]


def test_ttl_deletes_the_job_once_expired() -> None:
    j = job("j").task("w").ttl(60).phase("Completed").build()
    j["status"]["state"]["lastTransitionTime"] = "2026-01-01T11:59:30Z"
    early = plan_for(j)
    assert early.delete_job is False
    assert early.requeue_after == timedelta(seconds=30)
    late = plan_for(j, now=T0 + timedelta(seconds=30))
    assert late.delete_job is True
    assert any(e.reason == "TTLExpired" for e in late.events)


def test_ttl_is_not_applied_before_the_job_finished() -> None:
    j = job("j").task("w").ttl(0).phase("Running").build()
    assert plan_for(j, [pod_of(j, "w", 0)]).delete_job is False


def test_terminal_phase_removes_pod_group_and_plugin_objects() -> None:
    world = World(job("j").task("w").plugin("svc").plugin("ssh").build())
    world.step()
    world.admit("Running")
    world.step()
    assert len(world.children) == 4
    world.set_all("Succeeded")
    world.settle(3)
    assert world.phase == "Completed"
    world.step()
    assert world.children == {}
    assert world.pod_group is None
    assert "plugin-svc" not in world.status["controlledResources"]
    assert world.status["succeeded"] == 1
    assert world.step().status is None


def test_running_duration_is_written_where_volcano_writes_it() -> None:
    """Volcano's kills write it (creation to the phase change); its sync of a Pending or Running
    Job drops it, and rewrites a Running Job that has one the moment it takes the Job over."""
    world = World(job("j").task("w").build())
    world.step()
    assert "runningDuration" not in world.status
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step(timedelta(minutes=2))
    assert world.phase == "Running"
    assert "runningDuration" not in world.status
    world.set_all("Succeeded")
    world.step(timedelta(minutes=1))
    world.settle()
    assert world.phase == "Completed"
    assert world.status["runningDuration"].startswith("4m")  # creation to Completed


def test_a_running_duration_left_from_before_a_restart_is_dropped() -> None:
    built = job("j").task("w").phase("Running", runningDuration="5m0s")
    world = World(built.build())
    world.step()
    assert world.phase == "Running"
    assert "runningDuration" not in world.status


def test_steady_state_with_plugins_plans_nothing() -> None:
    world = World(job("j").task("w", 2).plugin("svc").plugin("ssh").plugin("env").build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    plan = world.step()
    assert (plan.create, plan.update, plan.delete, plan.status) == ([], [], [], None)
    assert plan.requeue_after is None
