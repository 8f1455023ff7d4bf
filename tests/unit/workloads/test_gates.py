"""Volcano's `--controllers` gates as a table: which controllers run, and the refused gates."""

from __future__ import annotations

import pytest

from controller.gates import GateError, enabled, parse_gates

ENABLED = [
    # gates, controller, runs
    ("*", "pg-controller", True),
    ("*,-pg-controller", "pg-controller", False),
    ("*,-pg-controller", "queue-controller", True),
    ("queue-controller", "pg-controller", False),
    ("+pg-controller", "pg-controller", True),
    ("", "pg-controller", False),
    ("*,-jobflow-controller", "jobflow-controller", False),
    ("*,-jobflow-controller", "cronjob-controller", True),
]


@pytest.mark.parametrize(("gates", "name", "runs"), ENABLED)
def test_enabled(gates: str, name: str, runs: bool) -> None:
    assert enabled(name, parse_gates(gates)) is runs


REFUSED = [
    ("*,-nosuch-controller", "unknown controller 'nosuch-controller'"),
    ("+pg-controller,-pg-controller", "cannot have both '-' and '+' prefixes"),
    ("*,-job-controller", "the job controller cannot be turned off"),
]


@pytest.mark.parametrize(("gates", "message"), REFUSED)
def test_refused(gates: str, message: str) -> None:
    with pytest.raises(GateError, match=message.replace("+", r"\+")):
        parse_gates(gates)
