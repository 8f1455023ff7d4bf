"""`controller.job.decide.gang.gate_open`: a gang scheduler's pods wait for an admitted PodGroup."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.decide.gang import gate_open

GANG = frozenset({"volcano"})


def group(phase: str | None) -> dict[str, Any] | None:
    return None if phase is None else {"status": {"phase": phase}}


@pytest.mark.parametrize(
    ("scheduler", "pod_group", "open_"),
    [
        ("volcano", group(None), False),
        ("volcano", group("Pending"), False),
        ("volcano", group("Inqueue"), True),
        ("volcano", group("Running"), True),
        (None, group("Pending"), False),
        ("default-scheduler", group(None), True),
    ],
    ids=[
        "no group yet",
        "group pending",
        "inqueue admits",
        "running admits",
        "default scheduler name is volcano",
        "other schedulers do not wait",
    ],
)
def test_gate_open(scheduler: str | None, pod_group: dict[str, Any] | None, open_: bool) -> None:
    assert gate_open(scheduler, GANG, pod_group) is open_
