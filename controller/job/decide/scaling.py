"""Which pod slots to create, which pods a scale-down removes, and whether the job was scaled.
Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import TypedDict

from controller.job.decide.podview import JobPod
from shared import labels


def extra_pods(pods: Iterable[JobPod], replicas: Mapping[str, int]) -> list[JobPod]:
    """Pods of tasks that no longer exist or with an index beyond their task's replicas,
    highest index first (Volcano scales down from the top)."""
    extra = [
        pod
        for pod in pods
        if pod.task not in replicas or pod.index is None or pod.index >= replicas[pod.task or ""]
    ]
    return sorted(extra, key=lambda p: (-(p.index or 0), p.name))


def missing_indexes(
    job_name: str, task: str, replicas: int, existing: Set[str], succeeded: Set[int]
) -> list[int]:
    """Indexes of `task` with no pod of that name and no recorded success."""
    return [
        i
        for i in range(replicas)
        if labels.pod_name(job_name, task, i) not in existing and i not in succeeded
    ]


class SpecShape(TypedDict):
    """What scaling acts on: the job's minAvailable and each task's replicas."""

    minAvailable: int
    replicas: dict[str, int]


class GangShape(TypedDict):
    """The gang numbers a PodGroup holds: what the controller last acted on, on the API."""

    minMember: int
    minTaskMember: dict[str, int]


def describe_change(last: SpecShape, new: SpecShape) -> str | None:
    """`minAvailable 2 -> 3, task w replicas 2 -> 4` (tasks by name), or None when equal."""
    changes = []
    if last["minAvailable"] != new["minAvailable"]:
        changes.append(f"minAvailable {last['minAvailable']} -> {new['minAvailable']}")
    for task in sorted(set(last["replicas"]) | set(new["replicas"])):
        before, after = last["replicas"].get(task, 0), new["replicas"].get(task, 0)
        if before != after:
            changes.append(f"task {task} replicas {before} -> {after}")
    return ", ".join(changes) or None


def spec_update(
    last: SpecShape | None, new: SpecShape, acted_gang: GangShape | None, new_gang: GangShape
) -> str | None:
    """JobUpdated: what changed between the spec shape last acted on and the new one, or None.

    `last` is the shape of the previous successful reconcile; the controller's own writes
    (status, annotations, the volumes patch) never change it. Without it (a controller that
    just started) the PodGroup tells what was acted on: a PodGroup that already holds the new
    gang numbers, or none at all (a new job, a job restarting), means nothing to report."""
    if last is not None:
        return describe_change(last, new)
    if acted_gang is None or acted_gang == new_gang:
        return None
    changes = []
    if acted_gang["minMember"] != new_gang["minMember"]:
        changes.append(f"minAvailable {acted_gang['minMember']} -> {new_gang['minMember']}")
    acted_tasks, new_tasks = acted_gang["minTaskMember"], new_gang["minTaskMember"]
    for task in sorted(set(acted_tasks) | set(new_tasks)):
        before, after = acted_tasks.get(task, 0), new_tasks.get(task, 0)
        if before != after:
            changes.append(f"task {task} minAvailable {before} -> {after}")
    return ", ".join(changes) or None
