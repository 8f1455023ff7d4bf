"""`controller.jobflow.decide.flow`: what a JobFlow's steps say."""

from __future__ import annotations

from typing import Any

import pytest

from controller.jobflow.decide.flow import accepted_phases, steps_of, targets_of
from shared.wire import phase_of


def test_steps_of_keeps_the_first_of_a_name_and_skips_nameless_entries() -> None:
    flow = {"spec": {"flows": [{"name": "a", "n": 1}, {"name": "a", "n": 2}, {}, {"name": "b"}]}}
    assert steps_of(flow) == {"a": {"name": "a", "n": 1}, "b": {"name": "b"}}
    assert steps_of({}) == {}


@pytest.mark.parametrize(
    ("step", "phases"),
    [
        ({}, frozenset({"Completed"})),
        ({"dependsOn": {"targets": ["a"]}}, frozenset({"Completed"})),
        ({"dependsOn": {"phases": ["Failed", "Completed"]}}, frozenset({"Failed", "Completed"})),
        # with a probe and no phases, only the probes decide
        ({"dependsOn": {"probe": {"tcpSocketList": [{"taskName": "t", "port": 1}]}}}, None),
        (
            {"dependsOn": {"probe": {"tcpSocketList": []}, "phases": ["Failed"]}},
            frozenset({"Failed"}),
        ),
    ],
)
def test_accepted_phases(step: dict[str, Any], phases: frozenset[str] | None) -> None:
    assert accepted_phases(step) == phases


@pytest.mark.parametrize(
    ("step", "targets"),
    [({}, []), ({"dependsOn": {"targets": ["a", "b"]}}, ["a", "b"]), ({"dependsOn": 3}, [])],
)
def test_targets_of(step: dict[str, Any], targets: list[str]) -> None:
    assert targets_of(step) == targets


@pytest.mark.parametrize(
    ("job", "phase"),
    [({}, ""), ({"status": {"state": {"phase": "Running"}}}, "Running"), ({"status": 1}, "")],
)
def test_phase_of(job: dict[str, Any], phase: str) -> None:
    assert phase_of(job) == phase
