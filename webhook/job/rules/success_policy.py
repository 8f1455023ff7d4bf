"""`spec.successPolicy`: its rules name tasks that exist and ask for counts and indexes the job
can reach (api.md, "Success policy")."""

from __future__ import annotations

from shared import indexranges
from shared.fielderrors import FieldError, Path
from shared.models import TaskSpec
from shared.models.job import JobSpec
from webhook.job.reading import Readable, everything, shown


def validate_success_policy(
    spec: JobSpec, path: Path, readable: Readable = everything
) -> list[FieldError]:
    policy = spec.success_policy
    if policy is None:
        return []
    errors: list[FieldError] = []
    rules_path = path.child("successPolicy", "rules")
    if not policy.rules and readable(rules_path):
        errors.append(
            FieldError.required(
                rules_path,
                "at least one rule must be specified when the successPolicy is specified",
            )
        )
    by_name = {t.name: t for t in spec.tasks if t.name}
    total = spec.total_replicas
    for k, rule in enumerate(policy.rules):
        where = rules_path.index(k)
        indexes_path, count_path = where.child("succeededIndexes"), where.child("succeededCount")
        if rule.succeeded_indexes is None and rule.succeeded_count is None:
            if readable(indexes_path) and readable(count_path):
                errors.append(
                    FieldError.required(
                        where,
                        "at least one of succeededCount or succeededIndexes must be specified",
                    )
                )
            continue
        task: TaskSpec | None = None
        if rule.task_name is not None:
            task = by_name.get(rule.task_name)
            if task is None:
                errors.append(
                    FieldError.invalid(
                        where.child("taskName"),
                        rule.task_name,
                        "must be the name of a task in spec.tasks",
                    )
                )
                continue
        elif rule.succeeded_indexes is not None:
            if len(spec.tasks) == 1:
                task = spec.tasks[0]
            elif readable(where.child("taskName")):
                errors.append(
                    FieldError.required(
                        where.child("taskName"),
                        "must name a task when succeededIndexes is set and the job has more "
                        "than one task",
                    )
                )
        listed: int | None = None
        if rule.succeeded_indexes is not None:
            text = rule.succeeded_indexes
            try:
                intervals = indexranges.parse(text)
            except indexranges.IndexRangeError as exc:
                errors.append(
                    FieldError.invalid(
                        indexes_path, shown(text), f"error parsing succeededIndexes: {exc}"
                    )
                )
                intervals = None
            if intervals is not None:
                listed = sum(last - first + 1 for first, last in intervals)
                if not intervals:
                    errors.append(
                        FieldError.invalid(indexes_path, text, "must list at least one index")
                    )
                elif task is not None and intervals[-1][1] >= task.replica_count:
                    errors.append(
                        FieldError.invalid(
                            indexes_path,
                            shown(text),
                            f"must be less than {task.replica_count} "
                            f"(the replicas of task {task.name})",
                        )
                    )
        count = rule.succeeded_count
        if count is None:
            continue
        if count <= 0:
            errors.append(FieldError.invalid(count_path, count, "must be greater than 0"))
        elif rule.succeeded_indexes is not None:
            if listed is not None and count > listed:
                errors.append(
                    FieldError.invalid(
                        count_path,
                        count,
                        f"must be less than or equal to {listed} (the number of indexes in the "
                        "specified succeededIndexes field)",
                    )
                )
        elif task is not None:
            if count > task.replica_count:
                errors.append(
                    FieldError.invalid(
                        count_path,
                        count,
                        f"must be less than or equal to {task.replica_count} "
                        f"(the replicas of task {task.name})",
                    )
                )
        elif count > total:
            errors.append(
                FieldError.invalid(
                    count_path,
                    count,
                    f"must be less than or equal to {total} (the total replicas of the job)",
                )
            )
    return errors
