"""`controller.job.decide.activesync`: a Pending or Running job kept in line with its spec."""

from __future__ import annotations

from typing import Any

import pytest
from builders import job, observe, pod_group_of, pod_of

from controller.job.decide import activesync, steps
from controller.job.decide.model import PlanSettings
from shared.models import JobPhase


def start(j: dict[str, Any], pods: list[dict[str, Any]], **kw: Any) -> tuple[Any, Any]:
    return steps.start(observe(j, pods, **kw), PlanSettings())


@pytest.mark.parametrize(
    ("pod_group_phase", "created"),
    [("Inqueue", ["j-w-0", "j-w-1"]), ("Pending", [])],  # the gang gate
)
def test_active_creates_pods_once_the_gang_is_admitted(
    pod_group_phase: str, created: list[str]
) -> None:
    j = job().task("w", 2).phase("Pending").build()
    seen, draft = start(j, [], pod_group=pod_group_of(j, pod_group_phase))
    draft = activesync.sync(seen, draft)
    assert [p["metadata"]["name"] for p in draft.created] == created


def test_active_creates_the_pod_group_first() -> None:
    j = job().task("w", 1).phase("Pending").build()
    seen, draft = start(j, [], pod_group=None)
    draft = activesync.sync(seen, draft)
    assert [o["kind"] for o in draft.effects.create] == ["PodGroup"]


def test_active_waits_for_a_missing_pvc() -> None:
    j = job().task("w", 1).volume("/data", claim_name="mine").phase("Pending").build()
    seen, draft = start(j, [], missing_pvcs=frozenset({"mine"}))
    draft = activesync.sync(seen, draft)
    assert (draft.status.phase, draft.status.reason) == (JobPhase.PENDING, "PVCNotFound")
    assert draft.effects.create == () and draft.effects.requeue == (activesync.PVC_RECHECK,)


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
    seen, draft = start(j, observed)
    draft = activesync.transitions(seen, draft)
    assert draft.status.phase == next_phase
