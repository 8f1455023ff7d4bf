"""`controller.job.decide.events`: the lifecycle events of one reconcile and the policies they
match (acting now, or starting a delayed action)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from builders import T0, job, observe, pod_group_of, pod_of

from controller.job.decide import events, steps
from controller.job.decide.model import PodEdge
from shared.models import PolicyAction, PolicyEvent


def running_job(**policy: Any) -> dict[str, Any]:
    b = job().task("worker", 2).phase("Running")
    if policy:
        b = b.policy(**policy)
    return b.build()


def derived(j: dict[str, Any], pods: list[dict[str, Any]], **kw: Any) -> list[tuple[str, Any]]:
    seen, draft = steps.start(observe(j, pods, **kw), steps.PlanSettings())
    _, derived = events.derive(seen, draft)
    return [(str(e.event), e.task if e.pod is None else e.pod) for e in derived]


J = running_job()


@pytest.mark.parametrize(
    ("pods", "kw", "expected"),
    [
        ([pod_of(J, "worker", 0), pod_of(J, "worker", 1)], {}, []),
        (
            [pod_of(J, "worker", 0, phase="Failed", exit_code=3), pod_of(J, "worker", 1)],
            {},
            [("PodFailed", "j-worker-0")],
        ),
        (
            [pod_of(J, "worker", 0, phase="Pending"), pod_of(J, "worker", 1)],
            {},
            [("PodPending", "j-worker-0")],
        ),
        # a pod of an older version, or being deleted, drives no policy
        (
            [pod_of(J, "worker", 0, phase="Failed", exit_code=3, deleting=True)],
            {},
            [],
        ),
        (
            [
                pod_of(J, "worker", 0, phase="Succeeded", exit_code=0),
                pod_of(J, "worker", 1, phase="Succeeded", exit_code=0),
            ],
            {},
            [("TaskCompleted", "worker")],
        ),
        (
            [pod_of(J, "worker", 1)],
            {"pod_edges": [PodEdge("deleted", pod_of(J, "worker", 0), False)]},
            [("PodEvicted", "j-worker-0")],
        ),
        # our own deletion is no eviction
        (
            [pod_of(J, "worker", 1)],
            {"pod_edges": [PodEdge("deleted", pod_of(J, "worker", 0), True)]},
            [],
        ),
        (
            [pod_of(J, "worker", 0), pod_of(J, "worker", 1)],
            {"pod_group": pod_group_of(J, "Unknown")},
            [("Unknown", None)],
        ),
    ],
)
def test_derive(pods: list[dict[str, Any]], kw: dict[str, Any], expected: list[Any]) -> None:
    got = [e for e in derived(J, pods, **kw) if e[0] != "JobUpdated"]
    assert got == expected


def test_a_scaled_job_raises_job_updated_once() -> None:
    j = running_job()
    pods = [pod_of(j, "worker", 0), pod_of(j, "worker", 1)]
    seen, draft = steps.start(observe(j, pods), steps.PlanSettings())
    draft = steps.remember(draft, {"specShape": {"minAvailable": 2, "replicas": {"worker": 1}}})
    draft, derived = events.derive(seen, draft)
    assert ("JobUpdated", None) in [(str(e.event), e.task) for e in derived]
    assert [e.reason for e in draft.effects.events] == ["JobUpdated"]
    assert draft.memory["specShape"] == {"minAvailable": 2, "replicas": {"worker": 2}}
    assert not events.scaled(seen, draft)  # the shape is now the one acted on


@pytest.mark.parametrize(
    ("policy", "decided", "timer_started"),
    [
        ({"event": "PodFailed", "action": "RestartJob"}, PolicyAction.RESTART_JOB, False),
        ({"event": "PodFailed", "action": "AbortJob", "timeout": "5m"}, None, True),
        # the pod failed 2 minutes ago: a 1m delay is already due
        (
            {"event": "PodFailed", "action": "AbortJob", "timeout": "1m"},
            PolicyAction.ABORT_JOB,
            False,
        ),
        ({"event": "PodEvicted", "action": "RestartJob"}, None, False),
    ],
)
def test_policies_act_now_or_start_a_timer(
    policy: dict[str, Any], decided: PolicyAction | None, timer_started: bool
) -> None:
    j = running_job(**policy)
    failed = pod_of(j, "worker", 0, phase="Failed", exit_code=3)
    failed["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = (
        T0 - timedelta(minutes=2)
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    seen, draft = steps.start(observe(j, [failed, pod_of(j, "worker", 1)]), steps.PlanSettings())
    draft, decisions = events.match(seen, draft)
    assert [x.action for x in decisions] == ([decided] if decided else [])
    assert bool(draft.timers) is timer_started
    if timer_started:
        (t,) = draft.timers.values()
        assert (t.event, t.pod) == (PolicyEvent.POD_FAILED, "j-worker-0")
        assert [e.reason for e in draft.effects.events] == ["ExecuteAction"]


def test_commands_are_consumed_one_at_a_time() -> None:
    j = running_job()

    def command(name: str, action: str, created: str) -> dict[str, Any]:
        return {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {
                "name": name,
                "namespace": "default",
                "creationTimestamp": created,
                "ownerReferences": [{"kind": "Job", "name": "j", "uid": j["metadata"]["uid"]}],
            },
            "action": action,
            "target": {"kind": "Job", "name": "j"},
        }

    cmds = [
        command("b", "AbortJob", "2026-01-01T11:00:02Z"),
        command("a", "RestartJob", "2026-01-01T11:00:01Z"),
    ]
    seen, _ = steps.start(observe(j, [], commands=cmds), steps.PlanSettings())
    decisions, consumed = events.from_commands(seen)
    assert [(x.action, x.command) for x in decisions] == [(PolicyAction.RESTART_JOB, True)]
    assert consumed.delete_commands == ("a",)
    assert consumed.requeue == (steps.FOLLOW_UP,)  # the next one waits for the next reconcile
