"""Lifecycle policies: events or an exit code, an action, a timeout; no repeats."""

from __future__ import annotations

from typing import Any

import pytest

from shared.fielderrors import Path
from shared.models import LifecyclePolicy
from tests.unit.webhook.job.rules.jobspecs import found
from webhook.job.rules.policies import validate_policies

AT = Path.of("spec", "policies")


@pytest.mark.parametrize(
    ("policies", "expected"),
    [
        pytest.param([{"event": "PodFailed", "action": "RestartJob"}], [], id="ok"),
        pytest.param([{"exitCode": 3, "action": "AbortJob"}], [], id="exit-code"),
        pytest.param(
            [{"event": "PodFailed", "exitCode": 3, "action": "AbortJob"}],
            [
                (
                    "spec.policies[0].exitCode",
                    "must not specify event and exitCode simultaneously: set event or events, "
                    "or exitCode",
                )
            ],
            id="both",
        ),
        pytest.param(
            [{"action": "AbortJob"}],
            [
                (
                    "spec.policies[0]",
                    "either event and exitCode should be specified: set one of event, events or "
                    "exitCode",
                )
            ],
            id="neither",
        ),
        pytest.param(
            [{"event": "PodFailed"}],
            [("spec.policies[0].action", "invalid policy action: every policy needs an action")],
            id="no-action",
        ),
        pytest.param(
            [
                {"event": "PodFailed", "action": "RestartJob"},
                {"event": "PodFailed", "action": "AbortJob"},
            ],
            [("spec.policies[1].event", "duplicate event PodFailed across different policy")],
            id="event-across-policies",
        ),
        pytest.param(
            [{"exitCode": 0, "action": "AbortJob"}],
            [
                (
                    "spec.policies[0].exitCode",
                    "0 is not a valid error code; use a non-zero exit code",
                )
            ],
            id="exit-code-0",
        ),
        pytest.param(
            [{"exitCode": 2, "action": "AbortJob"}, {"exitCode": 2, "action": "RestartJob"}],
            [("spec.policies[1].exitCode", "duplicate exitCode 2")],
            id="exit-code-twice",
        ),
        pytest.param(
            [{"event": "PodFailed", "action": "RestartJob", "timeout": "-1s"}],
            [("spec.policies[0].timeout", "must not be negative")],
            id="negative-timeout",
        ),
        pytest.param(
            [{"events": ["*", "PodFailed"], "action": "RestartJob"}],
            [
                (
                    "spec.policies[0].events[0]",
                    "if there's * here, no other policy should be here: * matches every event, "
                    "so it must be the only event in the list; remove the other events or the * "
                    "policy",
                )
            ],
            id="star-not-alone",
        ),
    ],
)
def test_validate_policies(policies: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    models = [LifecyclePolicy.from_wire(p) for p in policies]
    assert found(validate_policies(models, AT)) == expected


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        pytest.param(
            {"event": "Sometimes", "action": "RestartJob"}, "spec.policies[0].event", id="event"
        ),
        pytest.param(
            {"event": "PodFailed", "action": "Explode"}, "spec.policies[0].action", id="action"
        ),
        pytest.param(
            {"event": "PodFailed", "action": "RestartJob", "timeout": "x"},
            "spec.policies[0].timeout",
            id="timeout",
        ),
    ],
)
def test_unknown_values_are_refused_where_they_are(policy: dict[str, Any], field: str) -> None:
    assert [e.field for e in validate_policies([LifecyclePolicy.from_wire(policy)], AT)] == [field]
