"""CronJob validation (`/cronjobs/validate`): a pure function of the object.

The schedule, time zone and name follow Volcano's `/cronjobs/validate`; the job template is
validated exactly as a Job created from it would be (by the Job validator itself), so a bad
template is refused when the CronJob is written, not at its first run. The queue is not checked:
a queue closed today may be open at the next run.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from shared import names
from shared.cronschedule import ScheduleError, parse_schedule, zone_name_problems
from shared.fielderrors import FieldError, Path
from shared.models.cronjob import ConcurrencyPolicy
from webhook.job.create import validate_create
from webhook.job.reading import sort_errors
from webhook.settings import Settings

# A Job is named `<cronjob>-<minutes since the epoch>`: 11 characters of the 63 a name may have.
MAX_NAME_LENGTH: Final = 52
# The suffix of a Job created today (eight digits) stands in for the real one.
_SAMPLE_SUFFIX: Final = "-29468160"
SPEC: Final = Path.of("spec")
TEMPLATE: Final = SPEC.child("jobTemplate")


def _name_errors(raw: dict[str, Any]) -> list[FieldError]:
    where = Path.of("metadata", "name")
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        # generateName is not supported: the Job names would not be predictable.
        return [FieldError.required(where, "a CronJob needs a name")]
    if len(name) > MAX_NAME_LENGTH:
        return [
            FieldError.invalid(
                where,
                name,
                f"cronJob name must be no more than {MAX_NAME_LENGTH} characters to "
                "accommodate job name suffix (max 63 total)",
            )
        ]
    return FieldError.invalid_each(where, name, names.dns1123_label(name))


def _schedule_errors(spec: dict[str, Any]) -> list[FieldError]:
    where = SPEC.child("schedule")
    schedule = spec.get("schedule")
    if schedule is None or schedule == "":
        return [FieldError.required(where, "schedule is required, but got empty")]
    if not isinstance(schedule, str):
        return [FieldError.invalid(where, schedule, "must be a string")]
    if "TZ" in schedule:
        return [
            FieldError.invalid(
                where,
                schedule,
                "schedule should not contain TZ or CRON_TZ, TZ should only be set in the "
                "timeZone field",
            )
        ]
    try:
        parse_schedule(schedule)
    except ScheduleError as exc:
        return [
            FieldError.invalid(where, schedule, f"schedule is not a valid cron expression: {exc}")
        ]
    return []


def _zone_errors(spec: dict[str, Any]) -> list[FieldError]:
    where = SPEC.child("timeZone")
    if "timeZone" not in spec or spec["timeZone"] is None:
        return []
    zone = spec["timeZone"]
    if not isinstance(zone, str):
        return [FieldError.invalid(where, zone, "must be a string")]
    return FieldError.invalid_each(where, zone, zone_name_problems(zone))


def _scalar_errors(spec: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        value = spec.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(FieldError.invalid(SPEC.child(key), value, "must be an integer"))
        elif value < 0:
            errors.append(
                FieldError.invalid(SPEC.child(key), value, "must be greater than or equal to 0")
            )
    policy = spec.get("concurrencyPolicy")
    if policy is not None and policy not in {p.value for p in ConcurrencyPolicy}:
        errors.append(
            FieldError.not_supported(
                SPEC.child("concurrencyPolicy"), policy, [p.value for p in ConcurrencyPolicy]
            )
        )
    suspend = spec.get("suspend")
    if suspend is not None and not isinstance(suspend, bool):
        errors.append(FieldError.invalid(SPEC.child("suspend"), suspend, "must be a boolean"))
    return errors


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def template_job(raw: dict[str, Any]) -> dict[str, Any]:
    """The Job a run would create (its name with a sample suffix), for the Job validator."""
    meta = _object(raw.get("metadata"))
    template = _object(_object(raw.get("spec")).get("jobTemplate"))
    template_meta = _object(template.get("metadata"))
    job_meta: dict[str, Any] = {
        "name": f"{meta.get('name') or 'cronjob'}{_SAMPLE_SUFFIX}",
        "namespace": meta.get("namespace") or "default",
    }
    for key in ("labels", "annotations"):
        if template_meta.get(key):
            job_meta[key] = template_meta[key]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": job_meta,
        "spec": template.get("spec"),
    }


def _rerooted(error: FieldError) -> FieldError | None:
    """A Job error moved under `spec.jobTemplate`; None for the derived name (checked above)."""
    if error.field.startswith("metadata.name"):
        return None
    return dataclasses.replace(error, field=f"{TEMPLATE}.{error.field}")


def _template_errors(
    raw: dict[str, Any], spec: dict[str, Any], settings: Settings
) -> list[FieldError]:
    template = spec.get("jobTemplate")
    if template is None:
        return [FieldError.required(TEMPLATE)]
    if not isinstance(template, dict):
        return [FieldError.invalid(TEMPLATE, "<value>", "must be an object")]
    if not isinstance(template.get("spec"), dict):
        return [FieldError.required(TEMPLATE.child("spec"))]
    errors = validate_create(template_job(raw), None, settings)
    return [e for e in (_rerooted(error) for error in errors) if e is not None]


def validate_cronjob(raw: Any, settings: Settings) -> list[FieldError]:
    """Every problem of a CronJob (CREATE and UPDATE alike: only the new object counts)."""
    if not isinstance(raw, dict):
        return [FieldError.invalid(Path(), "<value>", "must be a CronJob object")]
    errors = _name_errors(raw)
    spec = raw.get("spec")
    if not isinstance(spec, dict):
        errors.append(FieldError.required(SPEC))
        return errors
    errors += _schedule_errors(spec)
    errors += _zone_errors(spec)
    errors += _scalar_errors(spec)
    errors += _template_errors(raw, spec, settings)
    return sort_errors(raw, errors)
