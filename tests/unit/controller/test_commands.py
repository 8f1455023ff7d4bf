"""`commands.consume`: one Command per reconcile, oldest first; bad ones deleted."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.decide.commands import consume
from shared.models import PolicyAction

UID = "job-uid"


def cmd(name: str, action: str, *, at: str = "2026-01-01T00:00:00Z", uid: str | None = UID) -> Any:
    target: dict[str, Any] = {"kind": "Job", "name": "j"}
    if uid is not None:
        target["uid"] = uid
    return {
        "metadata": {"name": name, "creationTimestamp": at},
        "action": action,
        "target": target,
    }


@pytest.mark.parametrize(
    ("commands", "decided", "deleted", "waiting", "warnings"),
    [
        ([], [], [], 0, 0),
        ([cmd("a", "AbortJob")], [PolicyAction.ABORT_JOB], ["a"], 0, 0),
        (
            [
                cmd("resume", "ResumeJob", at="2026-01-01T00:00:02Z"),
                cmd("abort", "AbortJob", at="2026-01-01T00:00:01Z"),
            ],
            [PolicyAction.ABORT_JOB],
            ["abort"],
            1,
            0,
        ),
        ([cmd("x", "Explode")], [], ["x"], 0, 1),
        ([cmd("o", "AbortJob", uid="other")], [], ["o"], 0, 1),
        ([cmd("n", "RestartJob", uid=None)], [PolicyAction.RESTART_JOB], ["n"], 0, 0),
        (
            [cmd("bad", "Explode"), cmd("good", "TerminateJob", at="2026-01-01T00:00:05Z")],
            [PolicyAction.TERMINATE_JOB],
            ["bad", "good"],
            0,
            1,
        ),
    ],
    ids=[
        "none",
        "one runs and is deleted",
        "oldest first, the next waits",
        "unknown action rejected",
        "another job's uid rejected",
        "no uid accepted",
        "a rejected one does not block the next",
    ],
)
def test_consume(
    commands: list[Any],
    decided: list[PolicyAction],
    deleted: list[str],
    waiting: int,
    warnings: int,
) -> None:
    out = consume(commands, UID)
    assert [d.action for d in out.decisions] == decided
    assert all(d.command for d in out.decisions)
    assert out.delete == deleted
    assert out.waiting == waiting
    assert sum(e.type == "Warning" for e in out.events) == warnings
