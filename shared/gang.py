"""The gang size: how many pods of a task, and of a job, must be placed together.

One rule for the three places that need it: the webhook's defaulting (a task's `minAvailable`
and the job's when unset), the job controller's PodGroup (`minMember`, `minTaskMember`) and the
elastic autoscaler (the minimum a job needs before it can run).
"""

from __future__ import annotations

from collections.abc import Iterable


def partition_min_available(min_partitions: int | None, partition_size: int | None) -> int | None:
    """minPartitions·partitionSize when a partitioned task needs some partitions (both > 0),
    else None."""
    if min_partitions is None or partition_size is None:
        return None
    if min_partitions > 0 and partition_size > 0:
        return min_partitions * partition_size
    return None


def task_min_available(
    replicas: int,
    *,
    min_available: int | None = None,
    min_replicas: int | None = None,
    min_partitions: int | None = None,
    partition_size: int | None = None,
) -> int:
    """A task's gang size, Volcano's default for its `minAvailable`.

    The task's own `minAvailable`; else minPartitions·partitionSize of a partitioned task; else,
    for an elastic task, its `minReplicas` when 1 ≤ minReplicas ≤ replicas (it needs only its
    minimum to run); else `replicas`.
    """
    if min_available is not None:
        return min_available
    by_partitions = partition_min_available(min_partitions, partition_size)
    if by_partitions is not None:
        return by_partitions
    if min_replicas is not None and 1 <= min_replicas <= replicas:
        return min_replicas
    return replicas


def job_min_available(min_available: int | None, task_sizes: Iterable[int]) -> int:
    """A job's gang size: its `minAvailable`, else the sum of its tasks' gang sizes."""
    if min_available is not None:
        return min_available
    return sum(task_sizes)
