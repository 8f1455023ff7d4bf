"""`controller.job.decide.activesync`: a Pending or Running job kept in line with its spec."""

from __future__ import annotations

from typing import Any

import pytest
from builders import job, observe, pod_group_of, pod_of

from controller.job.decide import activesync, draft
from controller.job.decide.model import PlanSettings
from shared.models import JobPhase


def start(j: dict[str, Any], pods: list[dict[str, Any]], **kw: Any) -> tuple[Any, Any]:
    return draft.start(observe(j, pods, **kw), PlanSettings())


@pytest.mark.parametrize(
    ("pod_group_phase", "created"),
    [("Inqueue", ["j-w-0", "j-w-1"]), ("Pending", [])],  # the gang gate
)
def test_active_creates_pods_once_the_gang_is_admitted(
    pod_group_phase: str, created: list[str]
) -> None:
    j = job().task("w", 2).phase("Pending").build()
    r, d = start(j, [], pod_group=pod_group_of(j, pod_group_phase))
    activesync.sync(r, d)
    assert [p["metadata"]["name"] for p in d.created] == created


def test_active_creates_the_pod_group_first() -> None:
    j = job().task("w", 1).phase("Pending").build()
    r, d = start(j, [], pod_group=None)
    activesync.sync(r, d)
    assert [o["kind"] for o in d.plan.create] == ["PodGroup"]


def test_active_waits_for_a_missing_pvc() -> None:
    j = job().task("w", 1).volume("/data", claim_name="mine").phase("Pending").build()
    r, d = start(j, [], missing_pvcs=frozenset({"mine"}))
    activesync.sync(r, d)
    assert (d.status.phase, d.status.reason) == (JobPhase.PENDING, "PVCNotFound")
    assert d.plan.create == [] and d.requeue == [activesync.PVC_RECHECK]


@pytest.mark.parametrize(
    ("phase", "pods", "next_phase"),
    [
        ("Pending", ["Running", "Running"], JobPhase.RUNNING),
        ("Pending", ["Running", "Pending"], JobPhase.PENDING),
        ("Running", ["Succeeded", "Succeeded"], JobPhase.COMPLETING),
        ("Running", ["Failed", "Running"], JobPhase.RUNNING),
    ],
)
def test_transitions_follow_the_pod_counts(
    phase: str, pods: list[str], next_phase: JobPhase
) -> None:
    j = job().task("w", 2).phase(phase).build()
    observed = [
        pod_of(
            j, "w", i, phase=p, exit_code=0 if p == "Succeeded" else 1 if p == "Failed" else None
        )
        for i, p in enumerate(pods)
    ]
    r, d = start(j, observed)
    activesync.transitions(r, d)
    assert d.status.phase == next_phase
