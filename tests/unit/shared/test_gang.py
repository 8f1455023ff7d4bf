"""`shared.gang`: one gang size for the webhook's defaulting, the PodGroup and the elastic
autoscaler."""

from __future__ import annotations

import pytest

from shared.gang import job_min_available, partition_min_available, task_min_available


@pytest.mark.parametrize(
    ("min_partitions", "partition_size", "expected"),
    [
        (2, 4, 8),
        (1, 3, 3),
        (0, 4, None),  # no partition needed: the task's other rules decide
        (2, 0, None),
        (None, 4, None),
        (2, None, None),
        (-1, 4, None),
    ],
)
def test_partition_min_available(
    min_partitions: int | None, partition_size: int | None, expected: int | None
) -> None:
    assert partition_min_available(min_partitions, partition_size) == expected


@pytest.mark.parametrize(
    ("replicas", "fields", "expected"),
    [
        (4, {}, 4),
        (4, {"min_available": 2}, 2),
        (4, {"min_available": 0}, 0),
        # the task's own minAvailable wins over its partitions and its minReplicas
        (8, {"min_available": 3, "min_partitions": 2, "partition_size": 2}, 3),
        (8, {"min_partitions": 2, "partition_size": 2}, 4),
        (8, {"min_partitions": 0, "partition_size": 2}, 8),
        (8, {"min_partitions": 2, "partition_size": 2, "min_replicas": 1}, 4),
        # an elastic task needs only its minimum
        (6, {"min_replicas": 2}, 2),
        (6, {"min_replicas": 6}, 6),
        (2, {"min_replicas": 3}, 2),  # above replicas: replicas
        (2, {"min_replicas": 0}, 2),
        (0, {}, 0),
    ],
)
def test_task_min_available(replicas: int, fields: dict[str, int], expected: int) -> None:
    assert task_min_available(replicas, **fields) == expected


@pytest.mark.parametrize(
    ("min_available", "tasks", "expected"),
    [
        (None, [2, 3], 5),
        (None, [], 0),
        (1, [2, 3], 1),
        (0, [2, 3], 0),
    ],
)
def test_job_min_available(min_available: int | None, tasks: list[int], expected: int) -> None:
    assert job_min_available(min_available, iter(tasks)) == expected
