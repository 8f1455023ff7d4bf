"""One case per row of controller.md's phase table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from builders import deleted_pods, job, plan_for, pod_of, rounds, written_phases

Wire = dict[str, Any]


def command(j: Wire, action: str, name: str = "cmd") -> Wire:
    return {
        "kind": "Command",
        "metadata": {"name": name, "namespace": "default"},
        "action": action,
        "target": {"kind": "Job", "name": j["metadata"]["name"], "uid": j["metadata"]["uid"]},
    }


@dataclass
class Row:
    id: str
    job: Wire
    pods: list[Wire] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    phase: str = ""
    reason: str | None = None


def _rows() -> list[Row]:
    two = job("j").task("w", replicas=2)
    rows: list[Row] = []
    j = job("j").task("w", replicas=2).build()
    rows.append(Row("(new) first reconcile -> Pending", j, phase="Pending", reason="JobCreated"))

    j = two.phase("Pending").build()
    rows.append(
        Row(
            "Pending: running+succeeded+failed >= minAvailable -> Running",
            j,
            [pod_of(j, "w", 0, phase="Running"), pod_of(j, "w", 1, phase="Failed")],
            phase="Running",
            reason="MinAvailableRunning",
        )
    )
    j = job("j").task("w", replicas=3).min_available(2).phase("Running").build()
    rows.append(
        Row(
            "Running: pending > R - minAvailable -> Pending",
            j,
            [pod_of(j, "w", i, phase="Pending") for i in range(2)] + [pod_of(j, "w", 2)],
            phase="Pending",
            reason="MinAvailableNotRunning",
        )
    )
    j = (
        job("j")
        .task("master")
        .task("worker", 2)
        .success_rule(task="master", indexes="0")
        .phase("Running")
        .build()
    )
    rows.append(
        Row(
            "Running: success policy rule met -> Completing (SuccessPolicy)",
            j,
            [
                pod_of(j, "master", 0, phase="Succeeded"),
                pod_of(j, "worker", 0),
                pod_of(j, "worker", 1),
            ],
            phase="Completing",
            reason="SuccessPolicy",
        )
    )
    j = job("j").task("w", replicas=3).min_success(2).phase("Running").build()
    rows.append(
        Row(
            "Running: succeeded >= minSuccess -> Completing (MinSuccess)",
            j,
            [
                pod_of(j, "w", 0, phase="Succeeded"),
                pod_of(j, "w", 1, phase="Succeeded"),
                pod_of(j, "w", 2),
            ],
            phase="Completing",
            reason="MinSuccess",
        )
    )
    j = job("j").task("a", 2).task("b", 1).phase("Running").build()
    rows.append(
        Row(
            "Running: all finished, a task below its minAvailable -> Failed",
            j,
            [
                pod_of(j, "a", 0, phase="Succeeded"),
                pod_of(j, "a", 1, phase="Failed"),
                pod_of(j, "b", 0, phase="Succeeded"),
            ],
            phase="Failed",
            reason="TaskFailed",
        )
    )
    j = job("j").task("w", 3, min_available=1).min_available(1).phase("Running").build()
    rows.append(
        Row(
            "Running: all finished, succeeded >= minAvailable -> Completing -> Completed",
            j,
            [
                pod_of(j, "w", 0, phase="Succeeded"),
                pod_of(j, "w", 1, phase="Failed"),
                pod_of(j, "w", 2, phase="Failed"),
            ],
            phase="Completed",
            reason="CompletionsReached",
        )
    )
    j = (
        job("j").task("w", 3, min_available=1).min_available(1).min_success(2).phase("Running")
    ).build()
    rows.append(
        Row(
            "Running: all finished, succeeded >= minAvailable but < minSuccess -> Failed",
            j,
            [
                pod_of(j, "w", 0, phase="Succeeded"),
                pod_of(j, "w", 1, phase="Failed"),
                pod_of(j, "w", 2, phase="Failed"),
            ],
            phase="Failed",
        )
    )
    j = job("j").task("w", 3, min_available=1).min_available(2).phase("Running").build()
    rows.append(
        Row(
            "Running: all finished, too few succeeded -> Failed",
            j,
            [
                pod_of(j, "w", 0, phase="Succeeded"),
                pod_of(j, "w", 1, phase="Failed"),
                pod_of(j, "w", 2, phase="Failed"),
            ],
            phase="Failed",
            reason="PodFailed",
        )
    )
    for phase in ("Pending", "Running"):
        for action in ("RestartJob",):
            j = job("j").task("w", 2).phase(phase).build()
            rows.append(
                Row(
                    f"{phase}: {action} -> Restarting",
                    j,
                    [pod_of(j, "w", 0), pod_of(j, "w", 1)],
                    [action],
                    phase="Restarting",
                    reason="CommandIssued",
                )
            )
        j = (
            job("j")
            .task("w", 2)
            .policy(event="PodFailed", action="RestartTask")
            .phase(phase)
            .build()
        )
        rows.append(
            Row(
                f"{phase}: RestartTask (policy) -> Restarting",
                j,
                [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)],
                phase="Restarting",
                reason="PolicyAction",
            )
        )
        j = (
            job("j")
            .task("w", 2)
            .policy(event="PodFailed", action="RestartPod")
            .phase(phase)
            .build()
        )
        rows.append(
            Row(
                f"{phase}: RestartPod (policy) -> Restarting",
                j,
                [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)],
                phase="Restarting",
                reason="PolicyAction",
            )
        )
    for phase in ("Pending", "Running", "Restarting"):
        for action, to in (
            ("AbortJob", "Aborting"),
            ("TerminateJob", "Terminating"),
            ("CompleteJob", "Completing"),
        ):
            j = job("j").task("w", 2).phase(phase).build()
            rows.append(
                Row(
                    f"{phase}: {action} -> {to}",
                    j,
                    [pod_of(j, "w", 0), pod_of(j, "w", 1)],
                    [action],
                    phase=to,
                    reason="CommandIssued",
                )
            )
    j = job("j").task("w", 2).max_retry(2).phase("Restarting", retryCount=2, version=2).build()
    rows.append(
        Row(
            "Restarting: retryCount >= maxRetry -> Failed (MaxRetryExceeded)",
            j,
            [pod_of(j, "w", 0, phase="Failed", version=1)],
            phase="Failed",
            reason="MaxRetryExceeded",
        )
    )
    j = job("j").task("w", 2).phase("Restarting", retryCount=1, version=1).build()
    rows.append(
        Row(
            "Restarting: the killed pods are gone -> Pending",
            j,
            [],
            phase="Pending",
            reason="Restarted",
        )
    )
    j = job("j").task("w", 2).phase("Aborting").build()
    rows.append(
        Row(
            "Aborting: no pod pending, running or terminating -> Aborted",
            j,
            [pod_of(j, "w", 0, phase="Succeeded")],
            phase="Aborted",
        )
    )
    j = job("j").task("w", 2).phase("Aborted", retryCount=1).build()
    rows.append(
        Row(
            "Aborted: ResumeJob -> Restarting -> Pending",
            j,
            [],
            ["ResumeJob"],
            phase="Pending",
            reason="Restarted",
        )
    )
    j = job("j").task("w", 2).phase("Completing").build()
    rows.append(
        Row(
            "Completing: nothing left running -> Completed",
            j,
            [pod_of(j, "w", 0, phase="Succeeded")],
            phase="Completed",
        )
    )
    j = job("j").task("w", 2).phase("Terminating").build()
    rows.append(Row("Terminating: nothing left running -> Terminated", j, [], phase="Terminated"))
    for terminal in ("Completed", "Failed", "Terminated"):
        j = job("j").task("w", 2).phase(terminal).build()
        rows.append(
            Row(
                f"{terminal}: anything -> unchanged",
                j,
                [pod_of(j, "w", 0, phase="Succeeded")],
                ["RestartJob"],
                phase=terminal,
            )
        )
    return rows


ROWS = _rows()


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_phase_table(row: Row) -> None:
    """The row's phase is written (each phase on the way is written by its own status write)
    with the row's reason."""
    plans = rounds(row.job, row.pods, commands=[command(row.job, a) for a in row.commands])
    statuses = [p.status for p in plans if p.status is not None] or [row.job["status"]]
    matching = [s for s in statuses if s["state"]["phase"] == row.phase]
    assert matching, f"{row.phase} never written: {[s['state']['phase'] for s in statuses]}"
    if row.reason is not None:
        assert row.reason in [s["state"]["reason"] for s in matching]


def test_resume_from_aborted_does_not_count_a_retry() -> None:
    j = job("j").task("w", 2).phase("Aborted", retryCount=1, version=3).build()
    plans = rounds(j, [], commands=[command(j, "ResumeJob")])
    assert written_phases(plans)[:2] == ["Restarting", "Pending"]
    status = plans[-1].status or plans[-2].status
    assert status is not None
    assert status["retryCount"] == 1
    assert status["version"] == 4
    assert [c["status"] for c in status["conditions"]][-2:] == ["Restarting", "Pending"]


def test_restart_job_kills_every_pod_and_bumps_version_and_retry() -> None:
    j = job("j").task("w", 2).max_retry(3).phase("Running").build()
    pods = [pod_of(j, "w", 0, phase="Succeeded"), pod_of(j, "w", 1)]
    decision, effects, *_ = rounds(j, pods, commands=[command(j, "RestartJob")])
    assert decision.status is not None
    assert decision.status["state"]["phase"] == "Restarting"
    assert decision.status["version"] == 1
    assert decision.status["retryCount"] == 1
    assert not decision.delete and not decision.annotate_out_of_sync, "decision first"
    assert deleted_pods(effects) == ["j-w-0", "j-w-1"]
    assert [r.name for r in effects.annotate_out_of_sync if r.kind == "Pod"] == ["j-w-0", "j-w-1"]
    assert any(r.kind == "PodGroup" for r in effects.delete)


def test_last_retry_keeps_finished_pods_for_their_logs() -> None:
    j = job("j").task("w", 3).max_retry(3).phase("Running", retryCount=2).build()
    pods = [
        pod_of(j, "w", 0, phase="Succeeded"),
        pod_of(j, "w", 1, phase="Failed", exit_code=2),
        pod_of(j, "w", 2),
    ]
    plans = rounds(j, pods, commands=[command(j, "RestartJob")])
    assert [n for p in plans for n in deleted_pods(p)] == ["j-w-2"]
    assert written_phases(plans) == ["Restarting", "Failed"]


def test_targeted_restart_keeps_the_pod_group() -> None:
    j = (
        job("j")
        .task("w", 2)
        .policy(event="PodFailed", action="RestartPod")
        .phase("Running")
        .build()
    )
    plans = rounds(j, [pod_of(j, "w", 0, phase="Failed", exit_code=1), pod_of(j, "w", 1)])
    assert [n for p in plans for n in deleted_pods(p)] == ["j-w-0"]
    assert not any(r.kind == "PodGroup" for p in plans for r in p.delete)
    assert written_phases(plans)[:2] == ["Restarting", "Pending"]
    assert plans[0].status is not None
    assert plans[0].status["version"] == 0
    assert plans[0].status["retryCount"] == 1


def test_abort_keeps_finished_pods_and_deletes_unfinished() -> None:
    j = job("j").task("w", 3).phase("Running").build()
    pods = [
        pod_of(j, "w", 0, phase="Succeeded"),
        pod_of(j, "w", 1, phase="Failed"),
        pod_of(j, "w", 2),
    ]
    decision, effects, *_ = rounds(j, pods, commands=[command(j, "AbortJob")])
    assert deleted_pods(decision) == []
    assert deleted_pods(effects) == ["j-w-2"]
    status = effects.status or decision.status
    assert status is not None
    assert status["terminating"] == 1


def test_terminate_keeps_finished_pods_and_deletes_unfinished() -> None:
    j = job("j").task("w", 3).phase("Running").build()
    pods = [
        pod_of(j, "w", 0, phase="Succeeded"),
        pod_of(j, "w", 1, phase="Failed"),
        pod_of(j, "w", 2),
    ]
    plans = rounds(j, pods, commands=[command(j, "TerminateJob")])
    assert [n for p in plans for n in deleted_pods(p)] == ["j-w-2"]
    assert written_phases(plans) == ["Terminating", "Terminated"]


def test_a_full_restart_forgets_the_indexes_that_succeeded() -> None:
    """They succeeded in the old version; after RestartJob every index runs again, also one
    whose succeeded pod was deleted already (its index is only in the status)."""
    j = job("j").task("w", 2).phase("Running", succeededIndexes={"w": "0"}).build()
    plans = rounds(j, [], commands=[command(j, "RestartJob")])
    assert written_phases(plans) == ["Restarting", "Pending"]
    assert all(not p.status.get("succeededIndexes") for p in plans if p.status is not None)


@pytest.mark.parametrize("terminal", ["Completed", "Failed", "Terminated"])
def test_a_finished_job_deletes_its_unfinished_pods(terminal: str) -> None:
    j = job("j").task("w", 2).phase(terminal).build()
    pods = [pod_of(j, "w", 0, phase="Succeeded"), pod_of(j, "w", 1, phase="Running")]
    assert deleted_pods(plan_for(j, pods)) == ["j-w-1"]


def test_resume_keeps_succeeded_pods_and_reruns_failed_ones() -> None:
    j = job("j").task("w", 3).phase("Aborted", version=1).build()
    pods = [pod_of(j, "w", 0, phase="Succeeded"), pod_of(j, "w", 1, phase="Failed")]
    plans = rounds(j, pods, commands=[command(j, "ResumeJob")])
    assert [n for p in plans for n in deleted_pods(p)] == ["j-w-1"]
    assert plans[0].status is not None
    assert plans[0].status["state"]["phase"] == "Restarting"
    assert plans[0].status["succeededIndexes"] == {"w": "0"}
