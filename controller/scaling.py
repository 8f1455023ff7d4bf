"""Which pod slots to create and which pods a scale-down removes. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any

from controller import podview
from shared import labels


def extra_pods(
    pods: Iterable[Mapping[str, Any]], replicas: Mapping[str, int]
) -> list[Mapping[str, Any]]:
    """Pods of tasks that no longer exist or with an index beyond their task's replicas,
    highest index first (Volcano scales down from the top)."""
    extra = []
    for pod in pods:
        task, index = podview.task_of(pod), podview.index_of(pod)
        if task not in replicas or index is None or index >= replicas[task or ""]:
            extra.append(pod)
    return sorted(extra, key=lambda p: (-(podview.index_of(p) or 0), podview.name_of(p)))


def missing_indexes(
    job_name: str, task: str, replicas: int, existing: Set[str], succeeded: Set[int]
) -> list[int]:
    """Indexes of `task` with no pod of that name and no recorded success."""
    return [
        i
        for i in range(replicas)
        if labels.pod_name(job_name, task, i) not in existing and i not in succeeded
    ]
