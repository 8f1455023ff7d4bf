"""dependsOn: a task's pods are created once its dependencies are ready."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.job.decide import podview
from controller.job.decide.podgroup import task_min_available
from shared.models import Job, TaskSpec


def _ready_count(pods: Sequence[Mapping[str, Any]]) -> int:
    return sum(
        1
        for p in pods
        if not podview.is_deleting(p)
        and (
            podview.phase(p) == podview.SUCCEEDED
            or (podview.phase(p) == podview.RUNNING and podview.all_containers_ready(p))
        )
    )


def dependency_ready(
    job: Job, name: str, pods_by_task: Mapping[str, Sequence[Mapping[str, Any]]]
) -> bool:
    dep = job.task(name)
    if dep is None:
        # Admission rejects unknown names; an unknown dependency must not block forever.
        return True
    return _ready_count(pods_by_task.get(name, ())) >= task_min_available(dep)


def can_create(
    job: Job, task: TaskSpec, pods_by_task: Mapping[str, Sequence[Mapping[str, Any]]]
) -> bool:
    """`iteration: any` needs one ready dependency when several are listed; otherwise all."""
    names = list((task.depends_on.name or []) if task.depends_on else [])
    if not names:
        return True
    ready = [dependency_ready(job, n, pods_by_task) for n in names]
    if task.depends_on is not None and task.depends_on.iteration == "any" and len(names) > 1:
        return any(ready)
    return all(ready)
