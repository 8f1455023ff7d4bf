"""The counts of a Job: each task's replicas, minAvailable and elastic bounds, and the job's
minAvailable and minSuccess against its tasks (admission.md, elastic.md)."""

from __future__ import annotations

from shared.fielderrors import FieldError, Path
from shared.models.job import JobSpec
from webhook.job.reading import Readable, everything


def validate_task_bounds(
    spec: JobSpec, path: Path, readable: Readable = everything
) -> list[FieldError]:
    """replicas / minAvailable / elastic bounds of each task (CREATE and UPDATE)."""
    errors: list[FieldError] = []
    for i, task in enumerate(spec.tasks):
        where = path.child("tasks").index(i)
        replicas = task.replicas
        if replicas is None and readable(where.child("replicas")):
            replicas = 0
        min_available = task.min_available
        if replicas is not None and min_available is not None and min_available > replicas:
            errors.append(
                FieldError.invalid(
                    where.child("minAvailable"),
                    min_available,
                    f"'minAvailable' is greater than 'replicas' in task {task.name}: "
                    f"must be less than or equal to replicas ({replicas})",
                )
            )
            min_available = None  # reported; the elastic bound below would repeat it
        min_r, max_r = task.min_replicas, task.max_replicas
        both = readable(where.child("minReplicas")) and readable(where.child("maxReplicas"))
        if (min_r is None) != (max_r is None):
            if both:
                missing = "maxReplicas" if max_r is None else "minReplicas"
                errors.append(
                    FieldError.required(
                        where.child(missing), "minReplicas and maxReplicas must be set together"
                    )
                )
            continue
        if min_r is None or max_r is None:
            continue
        if min_r > max_r:
            errors.append(
                FieldError.invalid(
                    where.child("minReplicas"),
                    min_r,
                    f"must be less than or equal to maxReplicas ({max_r})",
                )
            )
            continue
        if replicas is not None and not min_r <= replicas <= max_r:
            errors.append(
                FieldError.invalid(
                    where.child("replicas"),
                    replicas,
                    f"must be between minReplicas ({min_r}) and maxReplicas ({max_r}), inclusive",
                )
            )
        if min_available is not None and min_available > min_r:
            errors.append(
                FieldError.invalid(
                    where.child("minAvailable"),
                    min_available,
                    f"must be less than or equal to minReplicas ({min_r})",
                )
            )
    return errors


def min_available_is_task_sum(spec: JobSpec) -> bool:
    """spec.minAvailable equals Σ task minAvailable (what the default gives). Its upper bounds
    then follow from the per-task bounds, which are checked: a job-level error would only repeat
    a task's."""
    values = [t.min_available for t in spec.tasks]
    if any(v is None for v in values):
        return False
    return spec.min_available == sum(v for v in values if v is not None)


def validate_job_bounds(
    spec: JobSpec, path: Path, readable: Readable = everything, least_min_available: int = 1
) -> list[FieldError]:
    """Job-level bounds. A new job's gang is at least 1; an update may scale it to 0, as in
    Volcano (`least_min_available` 0)."""
    tasks = path.child("tasks")
    if not all(readable(tasks.index(i).child("replicas")) for i in range(len(spec.tasks))):
        return []  # the totals are unknown; the unreadable replicas are reported
    errors: list[FieldError] = []
    total = spec.total_replicas
    where = path.child("minAvailable")
    min_available = spec.min_available
    if min_available is not None and spec.tasks:
        if min_available < least_min_available:
            errors.append(
                FieldError.invalid(
                    where,
                    min_available,
                    f"should be greater than or equal to {least_min_available}",
                )
            )
        elif min_available_is_task_sum(spec):
            pass
        elif min_available > total:
            errors.append(
                FieldError.invalid(
                    where,
                    min_available,
                    f"job 'minAvailable' should not be greater than total replicas ({total}, "
                    "the sum of the tasks' replicas)",
                )
            )
        elif any(t.is_elastic for t in spec.tasks):
            floor = sum(
                (t.min_replicas or 0) if t.is_elastic else t.replica_count for t in spec.tasks
            )
            if min_available > floor:
                errors.append(
                    FieldError.invalid(
                        where,
                        min_available,
                        f"must be less than or equal to {floor}, the sum over tasks of "
                        "minReplicas (elastic tasks) or replicas (other tasks)",
                    )
                )
    if spec.min_success is not None and spec.min_success > total:
        errors.append(
            FieldError.invalid(
                path.child("minSuccess"),
                spec.min_success,
                f"job 'minSuccess' should not be greater than total replicas ({total}, "
                "the sum of the tasks' replicas)",
            )
        )
    return errors
