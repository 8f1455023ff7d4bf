"""RestartPartition: which pods make up the failing pod's partition.

A partitioned task's pods carry `volcano.sh/partition-id` (index // partitionSize). The restart
kills every pod of that task with that id, whatever its phase; without a partition (the task is
not partitioned, the pod has no label, the cause names no pod) the action does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.job.decide import podview
from shared.models.job import PARTITION_ID_LABEL


def partition_of(pod: Mapping[str, Any] | None) -> str | None:
    value = podview.labels_of(pod).get(PARTITION_ID_LABEL)
    return str(value) if value is not None else None


def partition_pods(
    pods: Iterable[Mapping[str, Any]], task: str | None, pod_name: str | None
) -> frozenset[str]:
    """Names of the pods in the same task and partition as `pod_name` (empty: no partition)."""
    members = list(pods)
    failing = next((p for p in members if podview.name_of(p) == pod_name), None)
    partition = partition_of(failing)
    if failing is None or partition is None or task is None:
        return frozenset()
    return frozenset(
        podview.name_of(p)
        for p in members
        if podview.task_of(p) == task and partition_of(p) == partition
    )
