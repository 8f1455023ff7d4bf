"""Volcano's feature gates, written as Kubernetes' --feature-gates."""

from __future__ import annotations

import pytest

from shared.featuregates import parse_feature_gates


@pytest.mark.parametrize(
    ("text", "enabled"),
    [
        ("", frozenset()),
        ("SchedulingGatesQueueAdmission=true", frozenset({"SchedulingGatesQueueAdmission"})),
        ("SchedulingGatesQueueAdmission=True", frozenset({"SchedulingGatesQueueAdmission"})),
        ("SchedulingGatesQueueAdmission=false", frozenset()),
        ("SchedulingGatesQueueAdmission=true,SchedulingGatesQueueAdmission=false", frozenset()),
        (" SchedulingGatesQueueAdmission=true , ", frozenset({"SchedulingGatesQueueAdmission"})),
    ],
)
def test_parse_feature_gates(text: str, enabled: frozenset[str]) -> None:
    assert parse_feature_gates(text) == enabled


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("SchedulingGatesQueueAdmission", "write a gate as Name=true or Name=false"),
        ("SchedulingGatesQueueAdmission=yes", "write a gate as Name=true or Name=false"),
        ("Nope=true", "unknown feature gate 'Nope'; known: SchedulingGatesQueueAdmission"),
    ],
)
def test_parse_feature_gates_names_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_feature_gates(text)
