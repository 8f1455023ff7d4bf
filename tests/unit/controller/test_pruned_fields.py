"""vcjob's own status fields dropped by a Job CRD that is not vcjob's (Volcano's own)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.decide import prunedfields

SENT = {"state": {"phase": "Running"}, "attempts": [{"index": 0}], "startTime": "t", "running": 1}


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (SENT, ()),  # vcjob's CRD keeps them
        ({"state": {"phase": "Running"}, "running": 1}, ("attempts", "startTime")),  # Volcano's
        (None, ("attempts", "startTime")),
        ({**SENT, "startTime": None}, ()),  # present, even empty: kept by the schema
    ],
)
def test_pruned(written: dict[str, Any] | None, expected: tuple[str, ...]) -> None:
    assert prunedfields.pruned(SENT, written) == expected


def test_only_vcjobs_fields_count() -> None:
    assert prunedfields.pruned({"running": 1, "conditions": []}, {}) == ()


def test_the_warning_names_the_fields_and_the_way_out() -> None:
    text = prunedfields.warning(("attempts", "startTime"))
    assert "attempts, startTime" in text and "docs/migrating-from-volcano.md" in text
