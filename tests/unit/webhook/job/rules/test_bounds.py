"""Counts: each task's replicas, minAvailable and elastic bounds; the job's minAvailable and
minSuccess."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.webhook.job.rules.jobspecs import SPEC, found, spec, task
from webhook.job.rules.bounds import (
    min_available_is_task_sum,
    validate_job_bounds,
    validate_task_bounds,
)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({"minAvailable": 2}, [], id="ok"),
        pytest.param(
            {"minAvailable": 3},
            [
                (
                    "spec.tasks[0].minAvailable",
                    "'minAvailable' is greater than 'replicas' in task worker: must be less than "
                    "or equal to replicas (2)",
                )
            ],
            id="min-over-replicas",
        ),
        pytest.param(
            {"minReplicas": 1},
            [("spec.tasks[0].maxReplicas", "minReplicas and maxReplicas must be set together")],
            id="elastic-half",
        ),
        pytest.param(
            {"minReplicas": 3, "maxReplicas": 2},
            [("spec.tasks[0].minReplicas", "must be less than or equal to maxReplicas (2)")],
            id="elastic-inverted",
        ),
        pytest.param(
            {"minReplicas": 3, "maxReplicas": 4},
            [
                (
                    "spec.tasks[0].replicas",
                    "must be between minReplicas (3) and maxReplicas (4), inclusive",
                )
            ],
            id="replicas-outside",
        ),
        pytest.param(
            {"minReplicas": 1, "maxReplicas": 4, "minAvailable": 2},
            [("spec.tasks[0].minAvailable", "must be less than or equal to minReplicas (1)")],
            id="gang-over-elastic-floor",
        ),
    ],
)
def test_validate_task_bounds(fields: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found(validate_task_bounds(spec(task(**fields)), SPEC)) == expected


def test_unreadable_replicas_count_as_unknown() -> None:
    # replicas set aside while reading: no "minAvailable > 0 replicas" error on top
    the_spec = spec(task(minAvailable=1, replicas=None))
    assert validate_task_bounds(the_spec, SPEC, lambda p: str(p) != "spec.tasks[0].replicas") == []
    assert found(validate_task_bounds(the_spec, SPEC))[0][0] == "spec.tasks[0].minAvailable"


@pytest.mark.parametrize(
    ("tasks", "fields", "least", "expected"),
    [
        pytest.param([task(minAvailable=2)], {"minAvailable": 2}, 1, [], id="task-sum"),
        pytest.param(
            [task(minAvailable=2)],
            {"minAvailable": 0},
            1,
            [("spec.minAvailable", "should be greater than or equal to 1")],
            id="zero-on-create",
        ),
        pytest.param([task(minAvailable=0)], {"minAvailable": 0}, 0, [], id="zero-on-update"),
        pytest.param(
            [task(minAvailable=1)],
            {"minAvailable": 3},
            1,
            [
                (
                    "spec.minAvailable",
                    "job 'minAvailable' should not be greater than total replicas (2, the sum of "
                    "the tasks' replicas)",
                )
            ],
            id="over-total",
        ),
        pytest.param(
            [task(replicas=4, minReplicas=1, maxReplicas=4, minAvailable=1)],
            {"minAvailable": 2},
            1,
            [
                (
                    "spec.minAvailable",
                    "must be less than or equal to 1, the sum over tasks of minReplicas (elastic "
                    "tasks) or replicas (other tasks)",
                )
            ],
            id="over-elastic-floor",
        ),
        pytest.param(
            [task(minAvailable=2)],
            {"minAvailable": 2, "minSuccess": 3},
            1,
            [
                (
                    "spec.minSuccess",
                    "job 'minSuccess' should not be greater than total replicas (2, the sum of "
                    "the tasks' replicas)",
                )
            ],
            id="min-success",
        ),
    ],
)
def test_validate_job_bounds(
    tasks: list[dict[str, Any]], fields: dict[str, Any], least: int, expected: list[tuple[str, str]]
) -> None:
    errors = validate_job_bounds(spec(*tasks, **fields), SPEC, least_min_available=least)
    assert found(errors) == expected


def test_min_available_is_task_sum() -> None:
    assert min_available_is_task_sum(
        spec(task(minAvailable=1), task("b", minAvailable=2), minAvailable=3)
    )
    assert not min_available_is_task_sum(spec(task(minAvailable=1), minAvailable=2))
    assert not min_available_is_task_sum(spec(task(), minAvailable=2))
