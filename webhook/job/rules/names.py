"""Names in a Job: the job's own (or its generateName), its tasks', the pod names they make,
and the object names the spec refers to (DNS-1123 subdomains)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shared import names
from shared.fielderrors import FieldError, Path
from shared.models.job import JobSpec
from webhook.job.reading import Readable, everything

# Placeholder length of the random suffix the API server appends to metadata.generateName.
GENERATED_SUFFIX: Final = "x" * 5
METADATA: Final = Path.of("metadata")


def label_errors(path: Path, value: str) -> list[FieldError]:
    return FieldError.invalid_each(path, value, names.dns1123_label(value))


def subdomain_errors(path: Path, value: str | None) -> list[FieldError]:
    """A name that is set must be a DNS-1123 subdomain."""
    return FieldError.invalid_each(path, value, names.dns1123_subdomain(value)) if value else []


def job_name(
    metadata: Mapping[str, Any], path: Path = METADATA
) -> tuple[str | None, list[FieldError]]:
    """The job's name for the naming checks (a generateName with a placeholder suffix), or None
    when it is missing or invalid; and the errors of that."""
    name = metadata.get("name")
    if isinstance(name, str) and name:
        errors = label_errors(path.child("name"), name)
        return (None, errors) if errors else (name, [])
    generate = metadata.get("generateName")
    if isinstance(generate, str) and generate:
        probe = generate + GENERATED_SUFFIX
        if problems := names.dns1123_label(probe):
            return None, FieldError.invalid_each(
                path.child("generateName"),
                generate,
                [
                    f"with the generated suffix the name must be a DNS-1123 label: {p}"
                    for p in problems
                ],
            )
        return probe, []
    return None, [FieldError.required(path.child("name"), "name or generateName is required")]


def validate_job_name(metadata: Mapping[str, Any], path: Path = METADATA) -> list[FieldError]:
    """`name` (or `generateName` with the suffix the API server adds) is a DNS-1123 label."""
    return job_name(metadata, path)[1]


def validate_task_names(
    spec: JobSpec, path: Path, job: str | None = None, readable: Readable = everything
) -> list[FieldError]:
    """At least one task; task names are unique DNS-1123 labels; with the job's name `job`, the
    highest pod name `<job>-<task>-<index>` is a DNS-1123 label too."""
    errors: list[FieldError] = []
    tasks = path.child("tasks")
    if not spec.tasks and readable(tasks):
        errors.append(
            FieldError.required(
                tasks, "No task specified in job spec: at least one task is required"
            )
        )
    seen: set[str] = set()
    for i, task in enumerate(spec.tasks):
        where = tasks.index(i).child("name")
        name = task.name
        if name is None or not readable(where):
            continue
        found = label_errors(where, name)
        if found:
            errors.extend(found)
            continue
        if name in seen:
            errors.append(FieldError.duplicate(where, name, "duplicated task name"))
        seen.add(name)
        if job is not None and task.replica_count >= 1:
            pod = f"{job}-{name}-{task.replica_count - 1}"
            if problems := names.dns1123_label(pod):
                errors.append(
                    FieldError.invalid(
                        where,
                        name,
                        f'the pod name "{pod}" (job name, task name and highest index) must be '
                        f"a DNS-1123 label: {'; '.join(problems)}",
                    )
                )
    return errors


def validate_spec_names(spec: JobSpec, path: Path) -> list[FieldError]:
    """schedulerName, priorityClassName and queue, when set, are DNS-1123 subdomains."""
    return (
        subdomain_errors(path.child("schedulerName"), spec.scheduler_name)
        + subdomain_errors(path.child("priorityClassName"), spec.priority_class_name)
        + subdomain_errors(path.child("queue"), spec.queue)
    )


def validate_mutable_names(spec: JobSpec, path: Path) -> list[FieldError]:
    """The names an update may change must still be names: priorityClassName and the volumes'
    volumeClaimName."""
    errors = subdomain_errors(path.child("priorityClassName"), spec.priority_class_name)
    for i, volume in enumerate(spec.volumes or []):
        where = path.child("volumes").index(i).child("volumeClaimName")
        errors.extend(subdomain_errors(where, volume.volume_claim_name))
    return errors
