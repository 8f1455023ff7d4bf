"""`controller.job.decide.steps`: the steps every concern of the planner shares."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from builders import job, observe, pod_group_of, pod_of

from controller.job.decide import outcome, plan, steps
from controller.job.decide.model import PlanSettings, PodEdge
from shared.models import JobPhase


def start(j: dict[str, Any], pods: list[dict[str, Any]] | None = None, **kw: Any) -> Any:
    return steps.start(observe(j, pods or [], **kw), PlanSettings())


@pytest.mark.parametrize(
    ("status_phase", "moves", "written", "events"),
    [
        # a new job: its first event names where it starts
        (None, [JobPhase.PENDING], [True], ["job phase Pending: m"]),
        ("Pending", [JobPhase.RUNNING], [True], ["job phase Pending -> Running: m"]),
        # one phase per status write: the second change waits for the next reconcile
        (
            "Pending",
            [JobPhase.RUNNING, JobPhase.FAILED],
            [True, False],
            ["job phase Pending -> Running: m"],
        ),
        # the same phase only updates the reason and message
        ("Running", [JobPhase.RUNNING], [True], []),
    ],
)
def test_set_phase(
    status_phase: str | None, moves: list[JobPhase], written: list[bool], events: list[str]
) -> None:
    b = job().task("w", 1)
    if status_phase is not None:
        b = b.phase(status_phase)
    seen, draft = start(b.build())
    moved = []
    for to in moves:
        draft, ok = steps.set_phase(seen, draft, to, "R", "m")
        moved.append(ok)
    assert moved == written
    assert [e.message for e in draft.effects.events] == events
    assert draft.status.phase == moves[0]
    assert (draft.effects.requeue == (steps.FOLLOW_UP,)) is (False in written)


def test_kill_marks_then_deletes_each_pod_once() -> None:
    j = job().task("w", 3).phase("Running").build()
    pods = [pod_of(j, "w", 0), pod_of(j, "w", 1, deleting=True), pod_of(j, "w", 2)]
    seen, draft = start(j, pods)
    draft = steps.kill(seen, draft, seen.pods)
    draft = steps.kill(seen, draft, seen.pods[:1])
    assert [ref.name for ref in draft.effects.annotate_out_of_sync] == ["j-w-0", "j-w-2"]
    assert [ref.name for ref in draft.effects.delete] == ["j-w-0", "j-w-2"]
    assert draft.deleting == {"j-w-0", "j-w-2"}


def test_a_deleted_pod_group_is_remembered_so_a_stale_copy_never_counts() -> None:
    j = job().task("w", 1).phase("Running").build()
    pg = pod_group_of(j)
    seen, draft = start(j, pod_group=pg)
    draft = steps.delete_pod_group(seen, draft)
    assert [ref.kind for ref in draft.effects.delete] == ["PodGroup"]
    assert draft.memory["deletedPodGroupUid"] == "pg-uid-1"
    # the next round still sees it in the cache: not deleted again, and not usable
    seen, draft = steps.start(
        observe(j, [], pod_group=pg, memory=dict(draft.memory)), PlanSettings()
    )
    assert steps.pod_group_usable(seen, draft) is None
    draft = steps.delete_pod_group(seen, draft)
    assert draft.effects.delete == ()


def test_a_succeeded_pod_deleted_before_the_status_recorded_it_still_counts() -> None:
    j = job().task("w", 2).phase("Running").build()
    gone = pod_of(j, "w", 0, phase="Succeeded", exit_code=0)
    seen, draft = start(j, [pod_of(j, "w", 1)], pod_edges=[PodEdge("deleted", gone, False)])
    assert steps.succeeded_now(seen, draft) == {"w": {0}}
    assert steps.slots(seen, draft) == (False, 1)


@pytest.mark.parametrize(
    ("phases", "counts"),
    [
        (["Running", "Pending"], (1, 1, 0)),
        (["Running", "Succeeded"], (1, 0, 1)),
        ([], (0, 0, 0)),
    ],
)
def test_tally(phases: list[str], counts: tuple[int, int, int]) -> None:
    j = job().task("w", 2).phase("Running").build()
    seen, draft = start(j, [pod_of(j, "w", i, phase=p) for i, p in enumerate(phases)])
    t = steps.tally(seen, draft)
    assert (t.running, t.pending, t.succeeded) == counts


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}


@pytest.mark.parametrize(
    ("effects", "create", "spec_patch", "events", "requeue", "delete_job"),
    [
        (steps.NOTHING, [], None, [], [], False),
        (
            steps.Effects(create=(CONFIGMAP,)) + steps.Effects(create=(SERVICE,)),
            [CONFIGMAP, SERVICE],
            None,
            [],
            [],
            False,
        ),
        # two concerns' spec fields land in one patch
        (
            steps.Effects(spec=(("volumes", []),)) + steps.Effects(spec=(("suspend", True),)),
            [],
            {"spec": {"volumes": [], "suspend": True}},
            [],
            [],
            False,
        ),
        (
            steps.event("Normal", "TTLExpired", "gone") + steps.Effects(delete_job=True),
            [],
            None,
            ["TTLExpired"],
            [],
            True,
        ),
        (steps.Effects(requeue=(steps.FOLLOW_UP,)), [], None, [], [steps.FOLLOW_UP], False),
    ],
)
def test_a_concerns_effects_enter_the_plan_in_one_place(
    effects: steps.Effects,
    create: list[Any],
    spec_patch: dict[str, Any] | None,
    events: list[str],
    requeue: list[Any],
    delete_job: bool,
) -> None:
    _, draft = start(job().task("w", 1).phase("Running").build())
    draft = steps.add(draft, effects)
    plan = outcome.compose(draft.effects, None, None, draft.memory, None)
    assert plan.create == create
    assert plan.job_spec_patch == spec_patch
    assert [e.reason for e in plan.events] == events
    assert list(draft.effects.requeue) == requeue
    assert plan.delete_job is delete_job


def test_a_second_spec_patch_keeps_the_first() -> None:
    _, draft = start(job().task("w", 1).phase("Running").build())
    draft = steps.add(draft, steps.Effects(spec=(("volumes", [{"mountPath": "/d"}]),)))
    draft = steps.add(draft, steps.Effects(spec=(("suspend", False),)))
    plan = outcome.compose(draft.effects, None, None, draft.memory, None)
    assert plan.job_spec_patch == {"spec": {"volumes": [{"mountPath": "/d"}], "suspend": False}}


def test_a_step_returns_a_new_draft_and_leaves_the_one_it_was_given() -> None:
    j = job().task("w", 2).phase("Running").build()
    seen, before = start(j, [pod_of(j, "w", 0), pod_of(j, "w", 1)])
    after = steps.kill(seen, before, seen.pods)
    after, moved = steps.set_phase(seen, after, JobPhase.ABORTING, "R", "m")
    after = steps.delete_pod_group(seen, after)
    assert moved and after.status.phase == JobPhase.ABORTING
    assert after.deleting == {"j-w-0", "j-w-1"} and "deletedPodGroupUid" in after.memory
    assert (before.status.phase, before.deleting, before.effects) == (
        JobPhase.RUNNING,
        frozenset(),
        steps.NOTHING,
    )
    assert "deletedPodGroupUid" not in before.memory


@pytest.mark.parametrize(
    "builder",
    [
        job().task("w", 2).phase("Running"),
        job().task("w", 2).plugin("ssh").plugin("svc").phase("Pending"),
        job().task("w", 2).max_retry(1).phase("Restarting", retryCount=1, version=1),
        job()
        .task("w", 2)
        .policy(action="RestartJob", event="PodFailed", timeout="1m")
        .phase("Running"),
    ],
)
def test_a_reconcile_changes_nothing_it_observed(builder: Any) -> None:
    """The planner hands the shell a plan; the cached objects and the memory it read stay as
    they were (the shell keeps them for the next round)."""
    j = builder.build()
    pods = [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)]
    remembered = {
        "specShape": {"minAvailable": 1, "replicas": {"w": 1}},
        "sshKey": {"private": "k", "public": "p"},
    }
    observed = observe(j, pods, memory=remembered)
    kept = copy.deepcopy((observed.job, observed.pods, observed.pod_group, observed.memory))
    plan.reconcile(observed, PlanSettings())
    assert (observed.job, observed.pods, observed.pod_group, observed.memory) == kept
