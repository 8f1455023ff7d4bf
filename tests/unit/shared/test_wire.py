"""The wire accessors: what they read, and what they make of an object missing a part."""

from __future__ import annotations

from typing import Any

import pytest

from shared.wire import phase_of, state_phase


@pytest.mark.parametrize(
    ("obj", "phase"),
    [
        ({"status": {"state": {"phase": "Running"}}}, "Running"),
        ({"status": {"state": {}}}, ""),
        ({"status": {"state": None}}, ""),
        ({"status": None}, ""),
        ({}, ""),
        ({"status": {"state": {"phase": 3}}}, ""),
        ({"status": "broken"}, ""),
    ],
)
def test_phase_of(obj: dict[str, Any], phase: str) -> None:
    assert phase_of(obj) == phase
    assert state_phase(obj.get("status") if isinstance(obj.get("status"), dict) else None) == phase
