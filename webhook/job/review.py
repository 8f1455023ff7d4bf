"""AdmissionReviews of Jobs: bytes in, an Answer out (the shared decoding and answers are
`webhook.admission`'s). A CREATE is defaulted and read into the model once
(`webhook.job.reading.read_new_job`): the patch, the schema's verdict and the rules share it.

No I/O and no framework: the HTTP layer only reads the body and writes what this returns, so
every wire rule of admission.md is testable here and the server can never answer 5xx.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from shared import labels
from shared.fielderrors import FieldError
from webhook import memo
from webhook.admission import (
    TOO_DEEP,
    Answer,
    Kind,
    QueueLookup,
    allow,
    decode,
    deny,
    encode_patch,
    error_body,
    refuse,
)
from webhook.job.create import refused_by_schema, validate_create, validate_new_job
from webhook.job.defaulting import diff
from webhook.job.reading import NewJob, not_a_job, read_new_job
from webhook.job.rules.job_warnings import job_warnings
from webhook.job.update import validate_update
from webhook.settings import Settings

log = logging.getLogger(__name__)

JOB_RESOURCE: Final = {
    "group": labels.BATCH_GROUP,
    "version": labels.BATCH_VERSION,
    "resource": "jobs",
}
# What the webhook remembers between requests, its one memo: encoded mutation patches with the
# schema's verdict on the spec (`mutation`), the problems of Job specs and of pod templates
# (`validate_create`).
MEMO: Final = memo.Memo(3 * memo.ENTRIES)
PATCH_TAG: Final = b"patch"


def _describe_resource(resource: Any) -> str:
    if not isinstance(resource, dict):
        return repr(resource)
    group = resource.get("group") or "core"
    return f"{group}/{resource.get('version')} {resource.get('resource')}"


def _expected_resource(request: dict[str, Any]) -> str | None:
    resource = request.get("resource")
    if not isinstance(resource, dict) or any(resource.get(k) != v for k, v in JOB_RESOURCE.items()):
        return (
            f"expected resource batch.volcano.sh/v1alpha1 jobs, got {_describe_resource(resource)}"
        )
    sub = request.get("subResource")
    if sub:
        return f"expected the jobs resource itself, got its subresource {sub!r}"
    return None


def _job_review(body: bytes) -> tuple[dict[str, Any], dict[str, Any], str] | Answer:
    """The review, its request and uid when the body reviews a Job; otherwise the answer."""
    decoded = decode(body)
    if isinstance(decoded, Answer):
        return decoded
    review, request, uid = decoded
    if problem := _expected_resource(request):
        return refuse(review, uid, problem)
    return decoded


def _denial(
    review: dict[str, Any],
    uid: str,
    errors: list[FieldError],
    request: dict[str, Any],
    warnings: list[str] | None = None,
) -> Answer:
    return deny(
        review,
        uid,
        request,
        errors,
        group=labels.BATCH_GROUP,
        kind=labels.JOB_KIND,
        warnings=warnings or (),
    )


def mutation(new: NewJob) -> tuple[str, bool]:
    """The mutation patch of the new Job (from its raw to its defaulted form), as JSON in base64
    ("" when there is none), and whether the CRD's schema would refuse a pod template or volume
    claim of its spec (`refused_by_schema`).

    Defaulting reads and writes `spec` alone, so both are functions of the spec and the
    scheduler name: they are worked out once per distinct spec and kept by the spec's digest.
    """
    spec = new.raw.get("spec")

    def work() -> tuple[str, bool]:
        return (encode_patch(diff(new.raw, new.defaulted)), refused_by_schema(spec))

    encoded = memo.encoding(spec) if isinstance(spec, dict) else None
    if encoded is None:
        return work()
    return MEMO.recall(memo.digest(PATCH_TAG, new.scheduler_name.encode(), encoded), work)


def encoded_patch(obj: dict[str, Any], scheduler_name: str) -> str:
    """The mutation patch of `obj`, as JSON in base64 ("" when there is none)."""
    return mutation(read_new_job(obj, scheduler_name))[0]


def mutate(body: bytes, settings: Settings, queues: QueueLookup) -> Answer:
    opened = _job_review(body)
    if isinstance(opened, Answer):
        return opened
    review, request, uid = opened
    operation = request.get("operation")
    if operation != "CREATE":
        return refuse(review, uid, f"expected operation CREATE, got {operation!r}")
    obj = request.get("object")
    if not isinstance(obj, dict):
        return _denial(review, uid, not_a_job(obj), request)
    new = read_new_job(obj, settings.scheduler_name)
    encoded, refused = mutation(new)
    if new.reading.errors or refused:
        # The CRD's schema would refuse the defaulted Job before the validating webhook sees it,
        # naming only its own problems: answer now, with every problem the validation finds.
        view, warning = queues()
        errors = validate_new_job(new, view, MEMO.recall)
        if errors:
            warnings = [warning] if warning else []
            return _denial(review, uid, errors, request, [*warnings, *job_warnings(obj)])
    return allow(review, uid, patch=encoded)


def validate(body: bytes, settings: Settings, queues: QueueLookup) -> Answer:
    opened = _job_review(body)
    if isinstance(opened, Answer):
        return opened
    review, request, uid = opened
    operation = request.get("operation")
    # From the network: typed Any so the validators' own checks handle non-objects.
    new: Any = request.get("object")
    old: Any = request.get("oldObject")
    warnings: list[str] = []
    if operation == "CREATE":
        view, warning = queues()
        if warning:
            warnings.append(warning)
        errors = validate_create(new, view, settings, MEMO.recall)
        # Immutable once created, so said once, on CREATE.
        warnings.extend(job_warnings(new))
    elif operation == "UPDATE":
        errors = validate_update(new, old, settings)
    else:
        return refuse(review, uid, f"expected operation CREATE or UPDATE, got {operation!r}")
    if errors:
        return _denial(review, uid, errors, request, warnings)
    return allow(review, uid, warnings)


def answer(kind: Kind, body: bytes, settings: Settings, queues: QueueLookup) -> Answer:
    """Never raises: an unexpected failure on a readable review is a denial that says so."""
    try:
        if kind is Kind.MUTATE:
            return mutate(body, settings, queues)
        return validate(body, settings, queues)
    except RecursionError:
        # decode() bounds the nesting, so this is a last resort; a traceback would say nothing.
        log.warning("admission failed: recursion limit", extra={"webhook": kind.value})
        return error_body(400, TOO_DEEP)
    except Exception as exc:
        log.exception("admission failed", extra={"webhook": kind.value})
        decoded = decode(body)
        if isinstance(decoded, Answer):
            return decoded
        review, _, uid = decoded
        return refuse(
            review, uid, f"the webhook could not evaluate the request: {type(exc).__name__}", 500
        )
