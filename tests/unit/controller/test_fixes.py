"""Every numbered fix of controller.md: each test fails on Volcano's behaviour."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from builders import (
    T0,
    World,
    created_pods,
    deleted_pods,
    job,
    observe,
    phase_of,
    plan_for,
    pod_of,
)

from controller.job.decide.model import KeyPair, PlanSettings, PodEdge
from controller.job.decide.plan import reconcile
from controller.job.decide.plugins.ssh import needs_generated_key

Wire = dict[str, Any]


def running_world(builder: Any) -> World:
    world = World(builder.build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    return world


def test_fix_1_replanning_after_a_failed_apply_is_idempotent() -> None:
    j = (
        job("j")
        .task("w", 3)
        .plugin("ssh")
        .plugin("svc")
        .volume("/data", claim={"accessModes": ["ReadWriteOnce"]})
        .phase("Pending")
        .build()
    )
    first = reconcile(observe(j, ssh_key=KeyPair("private", "ssh-ed25519 AAAA j\n")))
    # The apply failed half-way: nothing changed, the shell re-plans with the planner's memory
    # (and, the key being remembered, hands over no new one).
    assert not needs_generated_key(j, {}, first.memory)
    again = reconcile(observe(j, memory=first.memory))
    assert again.create == first.create
    assert again.job_spec_patch == first.job_spec_patch
    assert created_pods(first) == ["j-w-0", "j-w-1", "j-w-2"]


def test_fix_1_partial_apply_creates_only_what_is_missing() -> None:
    j = job("j").task("w", 3).phase("Pending").build()
    first = reconcile(observe(j))
    made = [p for p in first.create if p["kind"] == "Pod"][:1]
    made[0]["status"] = {"phase": "Pending"}
    again = reconcile(observe(j, made, memory=first.memory))
    assert created_pods(again) == ["j-w-1", "j-w-2"]


def test_fix_2_creates_are_guarded_by_the_job_uid() -> None:
    j = job("j").task("w", 2).build()
    plan = plan_for(j)
    assert created_pods(plan)
    assert plan.guard_uid == j["metadata"]["uid"]


def test_fix_2_a_deleted_job_gets_nothing_created() -> None:
    j = job("j").task("w", 2).phase("Running").build()
    j["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    plan = plan_for(j)
    assert plan.create == []
    assert plan.status is None


def test_fix_3_abort_terminate_complete_work_while_restarting() -> None:
    for action, to in (
        ("AbortJob", "Aborting"),
        ("TerminateJob", "Terminating"),
        ("CompleteJob", "Completing"),
    ):
        world = running_world(job("j").task("w", 2).policy(event="PodFailed", action="RestartJob"))
        world.pods["j-w-1"]["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
        world.set_pod("j-w-0", "Failed", exit_code=1)
        world.step()
        assert world.phase == "Restarting"
        world.command(action)
        world.step()
        assert world.phase in (to, to.replace("ing", "ed")), action


def test_fix_4_max_retry_exceeded_deletes_every_remaining_pod() -> None:
    j = job("j").task("w", 2).max_retry(1).phase("Restarting", retryCount=1, version=1).build()
    straggler = pod_of(j, "w", 0, phase="Running", version=1)
    plan = plan_for(j, [straggler])
    assert phase_of(plan) == "Failed"
    assert plan.status is not None
    assert plan.status["state"]["reason"] == "MaxRetryExceeded"
    assert deleted_pods(plan) == ["j-w-0"]


def test_fix_4_failed_job_leaves_nothing_running() -> None:
    world = running_world(
        job("j").task("w", 2).max_retry(1).policy(event="PodFailed", action="RestartJob")
    )
    world.set_pod("j-w-0", "Failed", exit_code=1)
    world.settle(3)
    assert world.phase == "Failed"
    assert [p["status"]["phase"] for p in world.pods.values()] == ["Failed"]
    assert world.pod_group is None


def test_fix_5_suspend_resume_never_consumes_retries() -> None:
    world = running_world(job("j").task("w", 2).max_retry(1))
    for round_ in range(3):
        world.command("AbortJob", name=f"abort-{round_}")
        world.settle(3)
        assert world.phase == "Aborted"
        world.command("ResumeJob", name=f"resume-{round_}")
        world.step()
        assert world.phase == "Restarting"
        world.step()
        assert world.phase == "Pending"
        world.step()
        world.admit("Running")
        world.step()
        world.set_all("Running")
        world.step()
        assert world.phase == "Running"
    assert world.status["retryCount"] == 0
    assert world.status["version"] == 3


def test_fix_6_counters_describe_pods_in_finished_phases() -> None:
    j = job("j").task("w", 3).phase("Completed").build()
    pods = [
        pod_of(j, "w", 0, phase="Succeeded"),
        pod_of(j, "w", 1, phase="Succeeded"),
        pod_of(j, "w", 2, phase="Failed"),
    ]
    plan = plan_for(j, pods)
    assert plan.status is not None
    assert (plan.status["succeeded"], plan.status["failed"]) == (2, 1)
    assert plan.status["taskStatusCount"] == {"w": {"phase": {"Failed": 1, "Succeeded": 2}}}
    assert plan.status["state"]["phase"] == "Completed"


def test_fix_7_aborted_only_when_the_pods_are_really_gone() -> None:
    j = job("j").task("w", 2).phase("Aborting").build()
    still_going = pod_of(j, "w", 0, deleting=True)
    plan = plan_for(j, [still_going])
    assert phase_of(plan) == "Aborting"
    assert plan.status is not None
    assert plan.status["terminating"] == 1
    assert phase_of(plan_for(j, [])) == "Aborted"


def test_fix_8_a_deleted_succeeded_pod_is_not_recreated() -> None:
    world = running_world(job("j").task("w", 3))
    world.set_pod("j-w-1", "Succeeded")
    world.step()
    assert world.status["succeededIndexes"] == {"w": "1"}
    pod = world.pods.pop("j-w-1")
    world.edges.append(PodEdge("deleted", pod, by_controller=False))
    plan = world.step()
    assert created_pods(plan) == []
    assert world.status["succeededIndexes"] == {"w": "1"}
    world.set_all("Succeeded")
    world.settle(2)
    assert world.phase == "Completed"


def test_fix_9_exit_code_of_the_first_container_that_failed() -> None:
    j = job("j").task("w", 2).policy(exit_code=42, action="AbortJob").phase("Running").build()
    failed = pod_of(j, "w", 0, phase="Failed", exit_codes=[0, 42])
    plan = plan_for(j, [failed, pod_of(j, "w", 1)])
    assert phase_of(plan) == "Aborting"


def test_fix_10_scaling_raises_job_updated() -> None:
    world = running_world(job("j").task("w", 2).policy(event="JobUpdated", action="CompleteJob"))
    world.job["spec"]["tasks"][0]["replicas"] = 3
    world.job["spec"]["minAvailable"] = 2
    world.step()
    assert world.phase in ("Completing", "Completed")


def test_fix_10_job_updated_detected_after_a_controller_restart() -> None:
    world = running_world(job("j").task("w", 2).policy(event="JobUpdated", action="CompleteJob"))
    world.job["spec"]["tasks"][0]["replicas"] = 3
    world.job["spec"]["tasks"][0]["minAvailable"] = 3
    world.job["spec"]["minAvailable"] = 3
    world.memory = None
    world.step()
    assert world.phase in ("Completing", "Completed")


def test_fix_11_a_delayed_eviction_still_recreates_the_pod() -> None:
    world = running_world(
        job("j").task("w", 2).policy(event="PodEvicted", action="RestartJob", timeout="5m")
    )
    world.evict("j-w-0")
    plan = world.step()
    assert created_pods(plan) == ["j-w-0"]
    assert world.phase == "Pending"  # the gang is short of one pod until it runs again
    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    assert not (world.memory or {}).get("timers")
    world.step(timedelta(minutes=10))
    assert world.phase == "Running"


def test_fix_11_a_delayed_eviction_acts_if_the_pod_never_recovers() -> None:
    world = running_world(
        job("j").task("w", 2).policy(event="PodEvicted", action="RestartJob", timeout="5m")
    )
    world.evict("j-w-0")
    world.step()
    world.step(timedelta(minutes=5))
    assert world.phase == "Restarting"


def test_fix_12_plugins_run_in_sorted_order() -> None:
    a = job("j").task("w", 2).plugin("svc").plugin("env").plugin("pytorch").build()
    b = job("j").task("w", 2).plugin("pytorch").plugin("env").plugin("svc").build()
    pods_a = [o for o in plan_for(a).create if o["kind"] == "Pod"]
    pods_b = [o for o in plan_for(b).create if o["kind"] == "Pod"]
    assert pods_a == pods_b
    names = [e["name"] for e in pods_a[0]["spec"]["containers"][0]["env"]]
    assert names[:2] == ["VK_TASK_INDEX", "VC_TASK_INDEX"]


def test_fix_13_hosts_config_map_follows_replicas_while_pending() -> None:
    world = World(job("j").task("w", 2).plugin("svc").build())
    world.step()
    assert world.phase == "Pending"
    assert world.children[("ConfigMap", "j-svc")]["data"]["VC_W_NUM"] == "2"
    world.job["spec"]["tasks"][0]["replicas"] = 4
    plan = world.step()
    assert world.phase == "Pending"
    assert [o["kind"] for o in plan.update if o["kind"] == "ConfigMap"] == ["ConfigMap"]
    assert world.children[("ConfigMap", "j-svc")]["data"]["VC_W_NUM"] == "4"


def test_fix_14_targeted_restart_keeps_plugin_objects_and_the_key() -> None:
    world = running_world(
        job("j")
        .task("w", 2)
        .plugin("ssh")
        .plugin("svc")
        .policy(event="PodFailed", action="RestartPod")
    )
    secret = dict(world.children[("Secret", "j-ssh")])
    world.set_pod("j-w-0", "Failed", exit_code=1)
    world.settle(3)
    assert world.status["retryCount"] == 1
    for plan in world.plans[-3:]:
        assert not [r for r in plan.delete if r.kind != "Pod"]
        assert not [o for o in plan.create if o["kind"] == "Secret"]
    assert world.children[("Secret", "j-ssh")]["data"]["id_rsa"] == secret["data"]["id_rsa"]
    assert "sshKey" not in (world.memory or {})


def test_fix_14_full_restart_keeps_the_ssh_key_too() -> None:
    world = running_world(job("j").task("w", 2).plugin("ssh"))
    key = world.children[("Secret", "j-ssh")]["data"]["id_rsa"]
    world.command("RestartJob")
    world.settle(3)
    assert world.children[("Secret", "j-ssh")]["data"]["id_rsa"] == key


def test_fix_15_missing_pvc_keeps_the_job_pending() -> None:
    j = job("j").task("w", 2).volume("/data", claim_name="mine").build()
    plan = plan_for(j, missing_pvcs=frozenset({"mine"}))
    assert plan.status is not None
    assert plan.status["state"]["phase"] == "Pending"
    assert plan.status["state"]["reason"] == "PVCNotFound"
    assert "mine" in plan.status["state"]["message"]
    assert plan.create == []
    assert plan.requeue_after is not None
    later = plan_for(
        {**j, "status": plan.status},
        now=T0 + timedelta(hours=1),
        missing_pvcs=frozenset({"mine"}),
        memory=plan.memory,
    )
    assert phase_of(later) in (None, "Pending")
    found = plan_for({**j, "status": plan.status}, memory=plan.memory)
    assert found.status is not None
    assert created_pods(found) == ["j-w-0", "j-w-1"]


def test_fix_15_pvc_from_a_claim_is_created_owned_and_written_back() -> None:
    world = World(
        job("j").task("w").volume("/data", claim={"accessModes": ["ReadWriteOnce"]}).build(),
        settings=PlanSettings(gang_schedulers=frozenset()),
    )
    plan = world.step()
    pvcs = [o for o in plan.create if o["kind"] == "PersistentVolumeClaim"]
    assert len(pvcs) == 1
    name = pvcs[0]["metadata"]["name"]
    assert re.fullmatch(r"j-pvc-[0-9a-z]{12}", name)  # Volcano's GenPVCName format
    assert pvcs[0]["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert world.job["spec"]["volumes"][0]["volumeClaimName"] == name
    assert world.status["controlledResources"][f"volume-pvc-{name}"] == name
    again = world.step()
    assert not [o for o in again.create if o["kind"] == "PersistentVolumeClaim"]


def test_fix_8_a_success_seen_only_in_the_deletion_counts() -> None:
    j = job("j").task("w", 2).phase("Running").build()
    gone = pod_of(j, "w", 0, phase="Succeeded")
    plan = plan_for(j, [pod_of(j, "w", 1)], pod_edges=[PodEdge("deleted", gone, False)])
    assert created_pods(plan) == []
    assert plan.status is not None
    assert plan.status["succeededIndexes"] == {"w": "0"}


def job_updated_events(plan: Any) -> list[tuple[str, str]]:
    return [(e.type, e.message) for e in plan.events if e.reason == "JobUpdated"]


def test_fix_10_a_manual_scale_raises_one_normal_job_updated_event() -> None:
    world = running_world(job("j").task("w", 2))
    assert all(job_updated_events(p) == [] for p in world.plans)
    world.job["spec"]["tasks"][0]["replicas"] = 3
    plan = world.step()
    assert job_updated_events(plan) == [("Normal", "the job was scaled: task w replicas 2 -> 3")]
    world.settle(3)
    assert all(job_updated_events(p) == [] for p in world.plans[-3:])


def test_fix_10_after_a_controller_restart_only_a_change_not_acted_on_is_raised() -> None:
    world = running_world(job("j").task("w", 2))
    world.memory = None  # a new leader: nothing remembered, the PodGroup holds what was acted on
    assert job_updated_events(world.step()) == []
    # Scaled while no controller ran: the PodGroup still holds the old gang numbers.
    world.job["spec"]["tasks"][0].update(replicas=3, minAvailable=3)
    world.job["spec"]["minAvailable"] = 3
    world.memory = None
    assert job_updated_events(world.step()) == [
        ("Normal", "the job was scaled: minAvailable 2 -> 3, task w minAvailable 2 -> 3")
    ]


def test_fix_10_a_job_restart_raises_no_job_updated() -> None:
    world = running_world(job("j").task("w", 2))
    world.command("RestartJob")
    for _ in range(8):  # through Restarting and Pending (a new PodGroup) back to Running
        world.step()
        if world.pod_group is not None:
            world.admit("Running")
        world.set_all("Running")
    assert world.status["retryCount"] == 1
    assert world.phase == "Running"
    assert all(job_updated_events(p) == [] for p in world.plans)


@pytest.mark.parametrize("action", ["RestartPod", "RestartTask"])
def test_a_targeted_restart_keeps_the_podgroup_as_volcano_1_16(action: str) -> None:
    """Volcano 1.16: RestartPod (and RestartTask) no longer delete the PodGroup; the gang keeps
    its admission while one pod or task is replaced."""
    world = running_world(job("j").task("w", 2).policy(event="PodFailed", action=action))
    assert world.pod_group is not None
    uid = world.pod_group["metadata"]["uid"]
    world.set_pod("j-w-0", "Failed", exit_code=1)
    world.settle(3)
    assert world.status["retryCount"] == 1
    for plan in world.plans[-3:]:
        assert not [r for r in plan.delete if r.kind == "PodGroup"]
        assert not [o for o in plan.create if o["kind"] == "PodGroup"]
    assert world.pod_group is not None and world.pod_group["metadata"]["uid"] == uid
