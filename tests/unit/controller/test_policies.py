"""Events, policy matching, delayed actions and commands (controller.md "Events and policies")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from builders import (
    T0,
    World,
    deleted_pods,
    job,
    phase_of,
    plan_for,
    pod_group_of,
    pod_of,
    rounds,
    written_phases,
)

from controller.job.decide import podview, policies
from controller.job.decide.model import PodEdge
from shared.models import Job

Wire = dict[str, Any]


def cmd(j: Wire, action: str, uid: str | None = None, name: str = "c1") -> Wire:
    return {
        "kind": "Command",
        "metadata": {"name": name, "namespace": "default"},
        "action": action,
        "target": {"kind": "Job", "name": "j", "uid": uid or j["metadata"]["uid"]},
    }


def test_task_policy_wins_over_job_policy() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodFailed", action="RestartPod", task="w")
        .policy(event="PodFailed", action="AbortJob")
        .phase("Running")
        .build()
    )
    plans = rounds(j, [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)])
    assert phase_of(plans[0]) == "Restarting"
    assert [n for p in plans for n in deleted_pods(p)] == ["j-w-0"]


def test_job_policy_applies_when_the_task_has_no_match() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodEvicted", action="RestartPod", task="w")
        .policy(event="PodFailed", action="AbortJob")
        .phase("Running")
        .build()
    )
    plan = plan_for(j, [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)])
    assert phase_of(plan) == "Aborting"


@pytest.mark.parametrize(
    ("exit_code", "expected"), [(3, "Aborting"), (4, "Running")], ids=["match", "other code"]
)
def test_exit_code_policy(exit_code: int, expected: str) -> None:
    j = job("j").task("w", 2).policy(exit_code=3, action="AbortJob").phase("Running").build()
    plan = plan_for(j, [pod_of(j, "w", 0, phase="Failed", exit_code=exit_code), pod_of(j, "w", 1)])
    assert phase_of(plan) == expected


@pytest.mark.parametrize(
    ("event", "pods_phase", "expected"),
    [
        ("PodFailed", "Failed", "Restarting"),
        ("TaskCompleted", "Succeeded", "Completed"),
    ],
    ids=["star matches PodFailed", "star ignores TaskCompleted (job completes)"],
)
def test_star_policy(event: str, pods_phase: str, expected: str) -> None:
    j = job("j").task("w", 1).policy(event="*", action="RestartJob").phase("Running").build()
    plans = rounds(j, [pod_of(j, "w", 0, phase=pods_phase, exit_code=1)])
    assert expected in written_phases(plans)


def test_task_completed_policy() -> None:
    j = (
        job("j")
        .task("master")
        .task("worker", 2)
        .policy(event="TaskCompleted", action="CompleteJob", task="master")
        .phase("Running")
        .build()
    )
    pods = [
        pod_of(j, "master", 0, phase="Succeeded"),
        pod_of(j, "worker", 0),
        pod_of(j, "worker", 1),
    ]
    plans = rounds(j, pods)
    assert written_phases(plans) == ["Completing", "Completed"]
    assert sorted(n for p in plans for n in deleted_pods(p)) == ["j-worker-0", "j-worker-1"]


def test_task_failed_from_summed_container_restarts() -> None:
    j = (
        job("j")
        .task("w", 2, max_retry=3)
        .policy(event="TaskFailed", action="TerminateJob")
        .phase("Running")
        .build()
    )
    below = plan_for(j, [pod_of(j, "w", 0, restarts=1), pod_of(j, "w", 1, restarts=1)])
    assert phase_of(below) == "Running"
    at = plan_for(j, [pod_of(j, "w", 0, restarts=2), pod_of(j, "w", 1, restarts=1)])
    assert phase_of(at) == "Terminating"


def test_unknown_pod_group_phase_raises_unknown() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="Unknown", action="RestartJob")
        .phase("Running", version=3)
        .build()
    )
    pods = [pod_of(j, "w", 0), pod_of(j, "w", 1)]
    plan = plan_for(j, pods, pod_group=pod_group_of(j, "Unknown"))
    assert phase_of(plan) == "Restarting"  # works after restarts too (Volcano: version 0 only)


def test_pod_evicted_from_a_deletion_edge() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodEvicted", action="RestartJob")
        .phase("Running")
        .build()
    )
    gone = pod_of(j, "w", 0)
    plan = plan_for(j, [pod_of(j, "w", 1)], pod_edges=[PodEdge("deleted", gone, False)])
    assert phase_of(plan) == "Restarting"


def test_our_own_deletions_are_not_evictions() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodEvicted", action="RestartJob")
        .phase("Running")
        .build()
    )
    gone = pod_of(j, "w", 0, out_of_sync=True)
    plan = plan_for(j, [pod_of(j, "w", 1)], pod_edges=[PodEdge("deleted", gone, True)])
    assert phase_of(plan) != "Restarting"


def test_events_of_an_older_version_only_sync() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodFailed", action="AbortJob")
        .phase("Running", version=2)
        .build()
    )
    plan = plan_for(
        j, [pod_of(j, "w", 0, phase="Failed", exit_code=1, version=1), pod_of(j, "w", 1, version=2)]
    )
    assert phase_of(plan) != "Aborting"


@pytest.mark.parametrize("mark", ["out_of_sync", "deleting"])
def test_pods_let_go_of_are_never_acted_on_again(mark: str) -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodFailed", action="RestartJob")
        .phase("Running")
        .build()
    )
    failed = pod_of(
        j,
        "w",
        0,
        phase="Failed",
        exit_code=1,
        out_of_sync=mark == "out_of_sync",
        deleting=mark == "deleting",
    )
    plan = plan_for(j, [failed, pod_of(j, "w", 1)])
    assert phase_of(plan) != "Restarting"


def test_pod_pending_without_timeout_never_matches() -> None:
    j = job("j").task("w", 2).policy(event="PodPending", action="AbortJob").phase("Pending").build()
    plan = plan_for(j, [pod_of(j, "w", 0, phase="Pending"), pod_of(j, "w", 1, phase="Pending")])
    assert phase_of(plan) == "Pending"
    assert "timers" not in plan.memory


def test_pod_pending_timeout_fires_when_still_pending() -> None:
    j = job("j").task("w", 1).policy(event="PodPending", action="AbortJob", timeout="1m").build()
    world = World(j)
    world.step()
    world.admit()
    world.step()
    plan = world.step()
    assert plan.memory["timers"]
    assert plan.requeue_after is not None
    assert plan.requeue_after <= timedelta(minutes=1)
    world.step(timedelta(seconds=30))
    assert world.phase == "Pending"
    world.step(timedelta(seconds=30))
    assert world.phase in ("Aborting", "Aborted")


def test_pod_pending_timer_is_cancelled_when_the_pod_runs() -> None:
    j = job("j").task("w", 1).policy(event="PodPending", action="AbortJob", timeout="1m").build()
    world = World(j)
    world.step()
    world.admit()
    world.step()
    world.step()
    assert world.memory and world.memory.get("timers")
    world.set_all("Running")
    world.step(timedelta(seconds=10))
    assert not (world.memory or {}).get("timers")
    world.step(timedelta(minutes=5))
    assert world.phase == "Running"


def test_pod_failed_timeout_delays_the_action() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodFailed", action="RestartJob", timeout="30s")
        .phase("Running")
        .build()
    )
    pods = [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)]
    first = plan_for(j, pods)
    assert phase_of(first) == "Running"
    assert first.requeue_after == timedelta(seconds=30)
    later = plan_for(j, pods, now=T0 + timedelta(seconds=31), memory=first.memory)
    assert phase_of(later) == "Restarting"


def test_commands_are_validated_recorded_and_deleted() -> None:
    j = job("j").task("w", 1).phase("Running").build()
    plan = plan_for(
        j,
        [pod_of(j, "w", 0)],
        commands=[
            cmd(j, "Dance", name="bad"),
            cmd(j, "AbortJob", uid="other", name="stale"),
            cmd(j, "AbortJob", name="good"),
        ],
    )
    assert sorted(plan.delete_commands) == ["bad", "good", "stale"]
    warnings = [e for e in plan.events if e.type == "Warning"]
    assert len(warnings) == 2
    assert any("Dance" in e.message for e in warnings)
    assert any("other" in e.message for e in warnings)
    assert any(e.reason == "CommandIssued" for e in plan.events)
    assert phase_of(plan) == "Aborting"


def test_restart_task_and_restart_pod_are_not_command_actions() -> None:
    j = job("j").task("w", 1).phase("Running").build()
    plan = plan_for(j, [pod_of(j, "w", 0)], commands=[cmd(j, "RestartTask")])
    assert plan.delete_commands == ["c1"]
    assert phase_of(plan) == "Running"
    assert any(e.type == "Warning" for e in plan.events)


def test_two_failed_pods_with_restart_pod_consume_one_retry() -> None:
    j = (
        job("j")
        .task("w", 3)
        .policy(event="PodFailed", action="RestartPod")
        .phase("Running")
        .build()
    )
    pods = [
        pod_of(j, "w", 0, phase="Failed", exit_code=1),
        pod_of(j, "w", 1, phase="Failed", exit_code=1),
        pod_of(j, "w", 2),
    ]
    plans = rounds(j, pods)
    assert sorted(n for p in plans for n in deleted_pods(p)) == ["j-w-0", "j-w-1"]
    assert plans[0].status is not None
    assert plans[0].status["retryCount"] == 1
    assert all(p.status["retryCount"] == 1 for p in plans if p.status is not None)


def test_firing_timer_rechecks_that_the_pod_still_failed() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodFailed", action="RestartJob", timeout="30s")
        .phase("Running")
        .build()
    )
    failed = [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)]
    first = plan_for(j, failed)
    assert first.memory["timers"]
    replaced = [pod_of(j, "w", 0, phase="Running", uid="new"), pod_of(j, "w", 1)]
    later = plan_for(j, replaced, now=T0 + timedelta(minutes=1), memory=first.memory)
    assert phase_of(later) == "Running"
    assert "timers" not in later.memory


def test_pod_pending_timer_is_cancelled_when_the_pod_finishes_directly() -> None:
    j = (
        job("j")
        .task("w", 1)
        .policy(event="PodPending", action="AbortJob", timeout="1m")
        .min_available(1)
        .phase("Pending")
        .build()
    )
    first = plan_for(j, [pod_of(j, "w", 0, phase="Pending", created=T0)])
    assert first.memory["timers"]
    done = [pod_of(j, "w", 0, phase="Succeeded")]
    later = rounds(j, done, now=T0 + timedelta(minutes=2), memory=first.memory)
    assert written_phases(later) == ["Running", "Completing", "Completed"]


def test_job_level_timer_for_unknown() -> None:
    j = (
        job("j")
        .task("w", 1)
        .policy(event="Unknown", action="AbortJob", timeout="10s")
        .phase("Running")
        .build()
    )
    pods = [pod_of(j, "w", 0)]
    first = plan_for(j, pods, pod_group=pod_group_of(j, "Unknown"))
    assert list(first.memory["timers"]) == ["Unknown"]
    recovered = plan_for(j, pods, now=T0 + timedelta(seconds=20), memory=first.memory)
    assert phase_of(recovered) == "Running"
    still = plan_for(
        j,
        pods,
        now=T0 + timedelta(seconds=20),
        memory=first.memory,
        pod_group=pod_group_of(j, "Unknown"),
    )
    assert phase_of(still) == "Aborting"


def test_commands_run_one_per_reconcile_oldest_first() -> None:
    world = World(job("j").task("w", 1).build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    world.command("AbortJob", name="a-suspend")
    world.command("ResumeJob", name="b-resume")
    first = world.step()
    assert first.delete_commands == ["a-suspend"]
    assert first.requeue_after is not None
    assert world.phase in ("Aborting", "Aborted")
    world.settle(2)
    assert world.commands == []
    assert world.phase in ("Restarting", "Pending")
    assert world.status["retryCount"] == 0


def read_pod(task: str, index: int, phase: str, restarts: int) -> podview.JobPod:
    return podview.JobPod(
        wire={},
        name=f"j-{task}-{index}",
        uid=None,
        task=task,
        index=index,
        phase=phase,
        version=0,
        deleting=False,
        out_of_sync=False,
        restarts=restarts,
        owner_uid=None,
        job_label="j",
    )


@pytest.mark.parametrize(
    ("pods", "failed"),
    [
        # the running and pending pods' restarts are summed against the task's maxRetry (3)
        ([("w", 0, "Running", 2), ("w", 1, "Pending", 1)], {"w"}),
        ([("w", 0, "Running", 2)], set()),
        # finished pods' restarts do not count
        ([("w", 0, "Failed", 5), ("w", 1, "Running", 0)], set()),
        ([("w", 0, "Running", 1), ("ps", 0, "Running", 9)], {"ps"}),
        ([], set()),
    ],
)
def test_failed_tasks_sum_the_restarts_of_a_tasks_live_pods(
    pods: list[tuple[str, int, str, int]], failed: set[str]
) -> None:
    wire = job("j").task("w", 2, max_retry=3).task("ps", 1, max_retry=3).build()
    tasks = Job.from_wire(wire).spec.tasks
    assert policies.failed_tasks(tasks, [read_pod(*p) for p in pods]) == failed
