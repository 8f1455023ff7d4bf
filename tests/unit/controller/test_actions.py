"""`controller.job.decide.actions`: the decisive action, its targets, and the transition it
writes before any of its effects."""

from __future__ import annotations

from typing import Any

import pytest
from builders import job, observe, pod_of

from controller.job.decide import actions, steps
from controller.job.decide.policies import Decision
from shared.models import JobPhase, PolicyAction

A = PolicyAction


def decision(action: PolicyAction, **kw: Any) -> Decision:
    return Decision(action, kw.pop("cause", "because"), **kw)


@pytest.mark.parametrize(
    ("decisions", "chosen"),
    [
        ([], None),
        ([decision(A.RESTART_POD, pod="p"), decision(A.ABORT_JOB)], A.ABORT_JOB),
        ([decision(A.RESTART_JOB), decision(A.RESTART_TASK, task="w")], A.RESTART_JOB),
        # a command wins a tie with a policy
        (
            [decision(A.RESTART_JOB, cause="policy"), decision(A.RESTART_JOB, command=True)],
            "command",
        ),
    ],
)
def test_choose_the_most_decisive(decisions: list[Decision], chosen: Any) -> None:
    got = actions.choose(decisions)
    if chosen is None:
        assert got is None
    elif chosen == "command":
        assert got is not None and got.command
    else:
        assert got is not None and got.action == chosen


def partitioned_pods() -> list[dict[str, Any]]:
    j = job().task("w", 4).build()
    pods = [pod_of(j, "w", i) for i in range(4)]
    for i, pod in enumerate(pods):
        pod["metadata"]["labels"]["volcano.sh/partition-id"] = str(i // 2)
    return pods


@pytest.mark.parametrize(
    ("main", "others", "tasks", "pods"),
    [
        (decision(A.RESTART_TASK, task="w"), [], {"w"}, set()),
        (decision(A.RESTART_POD, pod="j-w-1", task="w"), [], set(), {"j-w-1"}),
        (decision(A.RESTART_POD, task="w"), [], {"w"}, set()),
        (decision(A.RESTART_PARTITION, task="w", pod="j-w-3"), [], set(), {"j-w-2", "j-w-3"}),
        # targeted restarts due together are one restart
        (
            decision(A.RESTART_POD, pod="j-w-0"),
            [decision(A.RESTART_POD, pod="j-w-2"), decision(A.ABORT_JOB)],
            set(),
            {"j-w-0", "j-w-2"},
        ),
        (decision(A.RESTART_JOB), [], set(), set()),
    ],
)
def test_targets(main: Decision, others: list[Decision], tasks: set[str], pods: set[str]) -> None:
    got = actions.targets(partitioned_pods(), main, others)
    assert (set(got.tasks), set(got.pods)) == (tasks, pods)


def running() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    j = job().task("w", 2).max_retry(3).phase("Running", retryCount=1, version=2).build()
    return j, [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)]


@pytest.mark.parametrize(
    ("action", "phase", "retry_count", "version", "killed"),
    [
        (A.RESTART_JOB, JobPhase.RESTARTING, 2, 3, {"j-w-0", "j-w-1"}),
        (A.RESTART_POD, JobPhase.RESTARTING, 2, 2, {"j-w-0"}),
        (A.ABORT_JOB, JobPhase.ABORTING, 1, 2, {"j-w-1"}),
        (A.COMPLETE_JOB, JobPhase.COMPLETING, 1, 2, {"j-w-1"}),
        (A.TERMINATE_JOB, JobPhase.TERMINATING, 1, 2, {"j-w-1"}),
    ],
)
def test_execute_writes_the_transition_and_counts_what_it_kills(
    action: PolicyAction, phase: JobPhase, retry_count: int, version: int, killed: set[str]
) -> None:
    j, pods = running()
    seen, draft = steps.start(observe(j, pods), steps.PlanSettings())
    chosen = decision(action, pod="j-w-0", task="w")
    draft = actions.execute(seen, draft, chosen, [chosen])
    assert draft.decided
    assert (draft.status.phase, draft.status.retry_count, draft.status.version) == (
        phase,
        retry_count,
        version,
    )
    assert draft.deleting == killed
    assert (draft.status.restart is not None) == (phase == JobPhase.RESTARTING)
    kept = steps.keep_only_the_decision(draft).effects
    assert (kept.delete, kept.create) == ((), ())  # the next reconciles carry them out


def test_an_action_the_phase_ignores_is_reported_only_for_a_command() -> None:
    j = job().task("w", 1).phase("Completed").build()
    for command, reasons in ((False, []), (True, ["ActionIgnored"])):
        seen, draft = steps.start(observe(j, []), steps.PlanSettings())
        chosen = decision(A.RESTART_JOB, command=command)
        draft = actions.execute(seen, draft, chosen, [chosen])
        assert [e.reason for e in draft.effects.events] == reasons
        assert not draft.decided and draft.status.phase == JobPhase.COMPLETED


@pytest.mark.parametrize(
    ("spec", "phase", "failed"),
    [
        ({"activeDeadlineSeconds": 30}, "Running", True),  # started 90s ago
        ({"activeDeadlineSeconds": 600}, "Running", False),
        ({"activeDeadlineSeconds": 30}, "Completing", False),
        ({}, "Running", False),
    ],
)
def test_deadline_passed(spec: dict[str, Any], phase: str, failed: bool) -> None:
    b = job().task("w", 1).phase(phase, startTime="2026-01-01T11:58:30Z")
    b.spec.update(spec)
    seen, draft = steps.start(observe(b.build(), []), steps.PlanSettings())
    draft, passed = actions.deadline_passed(seen, draft)
    assert passed is failed
    assert (draft.status.phase == JobPhase.FAILED) is failed
    if failed:
        assert draft.status.reason == "DeadlineExceeded"
