"""When the runner reconciles a job again at once after applying its plan."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.decide.followup import follow_up_needed
from controller.job.decide.model import ObjectRef, Plan


def job(phase: str | None) -> dict[str, Any]:
    status = {"state": {"phase": phase}} if phase else {}
    return {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "status": status}


def status(phase: str) -> dict[str, Any]:
    return {"state": {"phase": phase}}


def creates(n: int) -> list[dict[str, Any]]:
    return [{"kind": "Pod", "metadata": {"name": f"j-w-{i}"}} for i in range(n)]


POD = ObjectRef("v1", "Pod", "ns", "j-w-0", "pod-uid")


@pytest.mark.parametrize(
    ("before", "plan", "written", "expected"),
    [
        pytest.param(None, Plan(create=creates(6), status=status("Pending")), 6, False,
                     id="new job: everything created and Pending written"),
        pytest.param(None, Plan(create=creates(6), status=status("Pending")), 5, True,
                     id="new job: one create was already there (not cached from a write)"),
        pytest.param(None, Plan(status=status("Pending")), 0, False,
                     id="new job: nothing to create yet (gang gate)"),
        pytest.param(None, Plan(create=creates(1), status=status("Running")), 1, True,
                     id="new job that went further than Pending"),
        pytest.param(None, Plan(create=creates(1), delete=[POD], status=status("Pending")), 2,
                     True, id="new job whose plan also deleted"),
        pytest.param(None, Plan(create=creates(1), job_spec_patch={"spec": {}},
                                status=status("Pending")), 1, True,
                     id="new job whose spec was patched"),
        pytest.param("Restarting", Plan(create=creates(2), status=status("Pending")), 2, True,
                     id="Pending after a restart"),
        pytest.param("Pending", Plan(create=creates(2)), 2, False,
                     id="everything created, phase unchanged (the gang admitted)"),
        pytest.param("Pending", Plan(create=creates(2), status=status("Pending")), 2, False,
                     id="everything created, the counts written, phase unchanged"),
        pytest.param("Pending", Plan(create=creates(2)), 1, True,
                     id="one create was already there (not cached from a write)"),
        pytest.param("Running", Plan(create=creates(1), update=creates(1)), 2, True,
                     id="created and updated"),
        pytest.param("Running", Plan(status=status("Restarting")), 0, True,
                     id="a decision written before its effects"),
        pytest.param("Running", Plan(status=status("Running")), 0, False,
                     id="status rewritten, same phase, nothing else"),
        pytest.param("Running", Plan(), 0, False, id="nothing done"),
    ],
)  # fmt: skip
def test_follow_up(before: str | None, plan: Plan, written: int, expected: bool) -> None:
    assert follow_up_needed(job(before), plan, written) is expected
