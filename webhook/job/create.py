"""Validation of a Job on CREATE (admission.md "Validation on CREATE", api.md success policy,
elastic.md): every rule of `webhook.job.rules` on the Job as it would be after defaulting, errors
in the order their fields appear in the object. The Job is defaulted and read once
(`webhook.job.reading.read_new_job`); the rules get both forms from that one `NewJob`.

Pure: the checks that read the spec alone may be remembered by the caller's `recall` (the review
layer's memo); the name and queue checks run every time.
"""

from __future__ import annotations

from typing import Any, Final

from shared.fielderrors import FieldError, Path
from shared.models import Job
from webhook import memo
from webhook.job import podtemplate
from webhook.job.reading import NewJob, Reading, not_a_job, read_new_job, sort_errors
from webhook.job.rules import jobcontrol, lifecycle, names
from webhook.job.rules.bounds import validate_job_bounds, validate_task_bounds
from webhook.job.rules.depends_on import validate_depends_on
from webhook.job.rules.job_queue import validate_queue
from webhook.job.rules.plugins import validate_plugins
from webhook.job.rules.policies import validate_policies
from webhook.job.rules.success_policy import validate_success_policy
from webhook.job.rules.templates import validate_templates
from webhook.job.rules.topology import validate_job_topology, validate_partitions
from webhook.job.rules.volumes import validate_volumes
from webhook.queueview import QueueView
from webhook.settings import Settings

SPEC: Final = Path.of("spec")
SpecProblems = tuple[tuple[FieldError, ...], tuple[FieldError, ...]]
# First part of the memo keys of spec problems (`_spec_problems`).
MEMO_TAG: Final = b"spec"


def is_object(value: object) -> bool:
    """Admission objects are typed as dicts but arrive from the network: check anyway."""
    return isinstance(value, dict)


def _objects(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def refused_by_schema(raw_spec: Any) -> bool:
    """Whether the CRD's schema would refuse a pod template or a volume claim of this raw spec:
    a value of the wrong type, a missing required field, a malformed quantity (`cpu: lots`).

    kube-apiserver checks the schema after the mutating webhook and before the validating one,
    so the validating webhook never sees such a Job: the mutating webhook answers it with every
    problem `validate_create` finds instead. (The rest of the schema is the model's: what it
    refuses, `read_job` reports.)"""
    if not isinstance(raw_spec, dict):
        return False
    for task in _objects(raw_spec.get("tasks")):
        template = task.get("template")
        if isinstance(template, dict) and podtemplate.schema_errors(template, Path()):
            return True
    for volume in _objects(raw_spec.get("volumes")):
        claim = volume.get("volumeClaim")
        if claim is not None and podtemplate.claim_schema_errors(claim, Path()):
            return True
    return False


def validate_create(
    raw: dict[str, Any],
    queues: QueueView | None,
    settings: Settings,
    recall: memo.Recall = memo.fresh,
) -> list[FieldError]:
    """Every problem of a new Job, judged on its defaulted form. `queues` None skips the queue
    check (no Queue CRD, or the check is off); `recall` may remember the spec's problems."""
    if not is_object(raw):
        return not_a_job(raw)
    return validate_new_job(read_new_job(raw, settings.scheduler_name), queues, recall)


def validate_new_job(
    new: NewJob, queues: QueueView | None, recall: memo.Recall = memo.fresh
) -> list[FieldError]:
    """`validate_create` of a Job the request has read already (`read_new_job`)."""
    reading = new.reading
    if reading.job is None:
        return sort_errors(new.defaulted, reading.errors)
    job = reading.job
    errors = list(reading.errors)
    name, name_errors = names.job_name(job.metadata)
    errors.extend(name_errors)
    errors.extend(names.validate_task_names(job.spec, SPEC, name, reading.readable))
    first, last = _spec_problems(new.raw.get("spec"), reading, job, new.scheduler_name, recall)
    errors.extend(first)
    errors.extend(jobcontrol.create_errors(new.raw))
    if queues is not None:
        errors.extend(validate_queue(job.spec, SPEC, queues, reading.readable))
    errors.extend(last)
    errors.extend(lifecycle.validate_spec(new.raw))
    return sort_errors(new.defaulted, errors)


def _spec_problems(
    raw_spec: Any, reading: Reading, job: Job, scheduler_name: str, recall: memo.Recall
) -> SpecProblems:
    """The problems found by the checks that read the (defaulted) spec alone: those before the
    queue check and those after it, in the order the checks run.

    They depend on the raw spec and the scheduler name only (defaulting reads nothing else),
    and jobs made from one manifest share their spec: `recall` may remember them by the spec's
    digest. A Job with a value that could not be read (then `reading.broken` is not empty) is
    rare and always worked out afresh.
    """
    encoded = None if reading.broken else memo.encoding(raw_spec)
    if encoded is None:
        return _work_out_spec_problems(reading, job, recall)
    key = memo.digest(MEMO_TAG, scheduler_name.encode(), encoded)
    return recall(key, lambda: _work_out_spec_problems(reading, job, recall))


def _work_out_spec_problems(reading: Reading, job: Job, recall: memo.Recall) -> SpecProblems:
    spec, readable = job.spec, reading.readable
    first = [
        *validate_task_bounds(spec, SPEC, readable),
        *validate_depends_on(spec, SPEC),
        *validate_templates(spec, SPEC, readable, recall),
    ]
    for i, task in enumerate(spec.tasks):
        where = SPEC.child("tasks").index(i).child("policies")
        first.extend(validate_policies(task.policies, where, readable))
    first.extend(names.validate_spec_names(spec, SPEC))
    first.extend(validate_job_bounds(spec, SPEC, readable))
    first.extend(validate_partitions(spec, SPEC))
    first.extend(validate_job_topology(spec, SPEC, readable))
    first.extend(validate_policies(spec.policies, SPEC.child("policies"), readable))
    first.extend(validate_plugins(spec, SPEC))
    first.extend(validate_volumes(spec, SPEC, readable))
    last = validate_success_policy(spec, SPEC, readable)
    return (tuple(first), tuple(last))
