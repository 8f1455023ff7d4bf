"""The success policy's rules name tasks that exist and reachable counts and indexes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.webhook.job.rules.jobspecs import SPEC, found, spec, task
from webhook.job.rules.success_policy import validate_success_policy

RULES = "spec.successPolicy.rules"


@pytest.mark.parametrize(
    ("rules", "tasks", "expected"),
    [
        pytest.param([{"succeededCount": 2}], [task()], [], id="count"),
        pytest.param(
            [{"taskName": "worker"}],
            [task()],
            [
                (
                    f"{RULES}[0]",
                    "at least one of succeededCount or succeededIndexes must be specified",
                )
            ],
            id="empty-rule",
        ),
        pytest.param(
            [{"taskName": "nope", "succeededCount": 1}],
            [task()],
            [(f"{RULES}[0].taskName", "must be the name of a task in spec.tasks")],
            id="unknown-task",
        ),
        pytest.param(
            [{"succeededIndexes": "0"}],
            [task("a"), task("b")],
            [
                (
                    f"{RULES}[0].taskName",
                    "must name a task when succeededIndexes is set and the job has more than one "
                    "task",
                )
            ],
            id="indexes-need-a-task",
        ),
        pytest.param(
            [{"succeededIndexes": "0-5"}],
            [task()],
            [(f"{RULES}[0].succeededIndexes", "must be less than 2 (the replicas of task worker)")],
            id="index-too-high",
        ),
        pytest.param(
            [{"succeededIndexes": "0", "succeededCount": 2}],
            [task()],
            [
                (
                    f"{RULES}[0].succeededCount",
                    "must be less than or equal to 1 (the number of indexes in the specified "
                    "succeededIndexes field)",
                )
            ],
            id="count-over-indexes",
        ),
        pytest.param(
            [{"taskName": "worker", "succeededCount": 3}],
            [task()],
            [
                (
                    f"{RULES}[0].succeededCount",
                    "must be less than or equal to 2 (the replicas of task worker)",
                )
            ],
            id="count-over-task",
        ),
        pytest.param(
            [{"succeededCount": 5}],
            [task("a"), task("b")],
            [
                (
                    f"{RULES}[0].succeededCount",
                    "must be less than or equal to 4 (the total replicas of the job)",
                )
            ],
            id="count-over-job",
        ),
        pytest.param(
            [{"succeededCount": 0}],
            [task()],
            [(f"{RULES}[0].succeededCount", "must be greater than 0")],
            id="count-zero",
        ),
    ],
)
def test_validate_success_policy(
    rules: list[dict[str, Any]], tasks: list[dict[str, Any]], expected: list[tuple[str, str]]
) -> None:
    the_spec = spec(*tasks, successPolicy={"rules": rules})
    assert found(validate_success_policy(the_spec, SPEC)) == expected


def test_no_success_policy_no_rule() -> None:
    assert validate_success_policy(spec(task()), SPEC) == []
