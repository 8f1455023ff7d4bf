"""Validation of a Job on UPDATE (admission.md "Validation on UPDATE"): the immutable fields,
the task count, the bounds of the new object (only problems the stored job did not have
already), and no scaling of a finished job.

Pure: no I/O, nothing kept between calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from shared import quantity
from shared.fielderrors import FieldError, Path
from shared.models import FINISHED_PHASES
from webhook.job.create import is_object
from webhook.job.defaulting import copy_json, defaulted_view
from webhook.job.reading import read_job, shown, sort_errors
from webhook.job.rules import jobcontrol, lifecycle, wording
from webhook.job.rules.bounds import validate_job_bounds, validate_task_bounds
from webhook.job.rules.names import validate_mutable_names
from webhook.job.rules.success_policy import validate_success_policy
from webhook.job.rules.topology import validate_job_topology, validate_partitions
from webhook.settings import Settings

SPEC: Final = Path.of("spec")
TASKS: Final = SPEC.child("tasks")
# Fields of `spec` that may change on UPDATE (admission.md, "Validation on UPDATE").
# suspend is mutable; managedBy's own rule is in webhook.job.rules.jobcontrol.
MUTABLE_JOB_FIELDS: Final = ("minAvailable", "priorityClassName", "suspend", "managedBy")
MUTABLE_TASK_FIELDS: Final = ("replicas", "minAvailable", "minReplicas", "maxReplicas")
# Keys whose values are resource quantities: compared by value on UPDATE.
QUANTITY_MAPS: Final = frozenset({"limits", "requests", "overhead", "capacity", "minResources"})


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, list | dict) and not value)


def _same_scalar(old: Any, new: Any, in_quantities: bool) -> bool:
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    if isinstance(old, int | float) and isinstance(new, int | float):
        if old == new:
            return True
    elif type(old) is type(new) and old == new:
        return True
    if in_quantities:
        a, b = quantity.try_parse(old), quantity.try_parse(new)
        return a is not None and a == b
    return False


def _changes(
    old: Any, new: Any, path: Path, in_quantities: bool = False
) -> Iterator[tuple[Path, Any]]:
    """Field paths where `new` differs semantically from `old`, with the new value."""
    if _is_empty(old) and _is_empty(new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        keys = list(new) + [k for k in old if k not in new]
        quantities = path.parts[-1] if path.parts else ""
        for key in keys:
            child = (
                path.key(key) if in_quantities or quantities in QUANTITY_MAPS else path.child(key)
            )
            yield from _changes(
                old.get(key), new.get(key), child, in_quantities or key in QUANTITY_MAPS
            )
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _changes(a, b, path.index(i), in_quantities)
        return
    if isinstance(old, dict | list) or isinstance(new, dict | list):
        yield path, new
        return
    if not _same_scalar(old, new, in_quantities):
        yield path, new


def _without_mutable(spec: dict[str, Any], claims: set[int]) -> dict[str, Any]:
    spec = copy_json(spec)
    for key in MUTABLE_JOB_FIELDS:
        spec.pop(key, None)
    tasks = spec.get("tasks")
    if isinstance(tasks, list):
        for task in tasks:
            if isinstance(task, dict):
                for key in MUTABLE_TASK_FIELDS:
                    task.pop(key, None)
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        for i, volume in enumerate(volumes):
            if isinstance(volume, dict) and i in claims:
                volume.pop("volumeClaimName", None)
    return spec


def _claim_volumes(*specs: dict[str, Any]) -> set[int]:
    """Indexes of volumes that create their PVC (their volumeClaimName is written back)."""
    found: set[int] = set()
    for spec in specs:
        volumes = spec.get("volumes")
        if isinstance(volumes, list):
            found.update(
                i for i, v in enumerate(volumes) if isinstance(v, dict) and v.get("volumeClaim")
            )
    return found


def _phase(job: dict[str, Any]) -> str | None:
    status = job.get("status")
    state = status.get("state") if isinstance(status, dict) else None
    phase = state.get("phase") if isinstance(state, dict) else None
    return phase if isinstance(phase, str) else None


def _immutability_errors(
    old: dict[str, Any], new: dict[str, Any], phase: str | None
) -> list[FieldError]:
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    new_spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    assert isinstance(old_spec, dict) and isinstance(new_spec, dict)  # noqa: S101 - narrowing
    errors: list[FieldError] = []
    old_tasks, new_tasks = old_spec.get("tasks"), new_spec.get("tasks")
    comparable_old = _without_mutable(old_spec, _claim_volumes(old_spec, new_spec))
    comparable_new = _without_mutable(new_spec, _claim_volumes(old_spec, new_spec))
    if (
        isinstance(old_tasks, list)
        and isinstance(new_tasks, list)
        and len(old_tasks) != len(new_tasks)
    ):
        errors.append(
            FieldError.forbidden(
                TASKS,
                f"job updates may not add or remove tasks (the job has {len(old_tasks)}, the "
                f"update has {len(new_tasks)})",
            )
        )
        comparable_old.pop("tasks", None)
        comparable_new.pop("tasks", None)
    for path, value in _changes(comparable_old, comparable_new, SPEC):
        errors.append(FieldError.invalid(path, shown(value), wording.IMMUTABLE))
    if phase in FINISHED_PHASES and isinstance(old_tasks, list) and isinstance(new_tasks, list):
        for i, (a, b) in enumerate(zip(old_tasks, new_tasks, strict=False)):
            if (
                isinstance(a, dict)
                and isinstance(b, dict)
                and a.get("replicas") != b.get("replicas")
            ):
                errors.append(
                    FieldError.forbidden(
                        TASKS.index(i).child("replicas"), f"a {phase} job cannot be scaled"
                    )
                )
    return errors


def validate_update(
    new: dict[str, Any], old: dict[str, Any], settings: Settings
) -> list[FieldError]:
    """Every problem of an update: immutable fields, task count, bounds on the new object, and
    no scaling of finished jobs."""
    if not is_object(new):
        return [FieldError.invalid(Path(), shown(new), "must be a Job object")]
    new_defaulted = defaulted_view(new, settings.scheduler_name)
    errors = list(read_job(new_defaulted).errors)
    already_wrong: set[str] = set()
    if is_object(old):
        old_defaulted = defaulted_view(old, settings.scheduler_name)
        errors.extend(
            _immutability_errors(
                lifecycle.without_mutable(old_defaulted),
                lifecycle.without_mutable(new_defaulted),
                _phase(old),
            )
        )
        errors.extend(lifecycle.validate_update(old_defaulted, new_defaulted, _phase(old)))
        errors.extend(jobcontrol.update_errors(old, new))
        already_wrong = {str(e) for e in _bound_errors(old_defaulted)}
    else:
        errors.append(FieldError.invalid(Path.of("oldObject"), shown(old), "must be a Job object"))
    # A bound the stored job already broke (it was admitted some other way) does not block
    # unrelated updates such as the controller writing a PVC name back: only new problems count.
    errors.extend(e for e in _bound_errors(new_defaulted) if str(e) not in already_wrong)
    return sort_errors(new_defaulted, errors)


def _bound_errors(defaulted: dict[str, Any]) -> list[FieldError]:
    """The rules an update must keep: counts, partitions, topology, success policy, names."""
    reading = read_job(defaulted)
    if reading.job is None:
        return []
    spec, readable = reading.job.spec, reading.readable
    return [
        *validate_task_bounds(spec, SPEC, readable),
        *validate_job_bounds(spec, SPEC, readable, least_min_available=0),
        *validate_partitions(spec, SPEC),
        *validate_job_topology(spec, SPEC, readable),
        *validate_success_policy(spec, SPEC, readable),
        *validate_mutable_names(spec, SPEC),
    ]
