"""AdmissionReview decoding and answering: bytes in, (HTTP status, JSON body) out.

No I/O and no framework: the HTTP layer only reads the body and writes what this returns, so
every wire rule of admission.md is testable here and the server can never answer 5xx.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from shared import labels
from shared.fielderrors import FieldError, render
from shared.jsoncodec import dumps, loads
from webhook import memo
from webhook.create import refused_by_schema
from webhook.defaulting import mutation_patch
from webhook.rules.job_warnings import job_warnings
from webhook.settings import Settings
from webhook.validation import (
    QueueView,
    read_job,
    sort_errors,
    validate_create,
    validate_update,
)

log = logging.getLogger(__name__)

ADMISSION_V1: Final = "admission.k8s.io/v1"
ADMISSION_VERSIONS: Final = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
JOB_RESOURCE: Final = {
    "group": labels.BATCH_GROUP,
    "version": labels.BATCH_VERSION,
    "resource": "jobs",
}
# How deep a review's JSON may nest. A real Job review stays under ~25 levels (review, object,
# spec, tasks, template, affinity terms…); the limit keeps every recursive check far from
# Python's own recursion limit.
MAX_DEPTH: Final = 100
TOO_DEEP: Final = (
    f"JSON nested too deeply: more than {MAX_DEPTH} levels (the webhook's limit); "
    "no Job needs that many"
)
# What the webhook remembers between requests, its one memo: encoded mutation patches with the
# schema's verdict on the spec (`mutation`), the problems of Job specs and of pod templates
# (`validate_create`).
MEMO: Final = memo.Memo(3 * memo.ENTRIES)
PATCH_TAG: Final = b"patch"
QUEUE_SKIPPED_WARNING: Final = (
    "the queue was not checked: no Queue CRD (queues.scheduling.volcano.sh) is installed"
)


class Kind(StrEnum):
    MUTATE = "mutate"
    VALIDATE = "validate"


class Result(StrEnum):
    ALLOWED = "allowed"
    DENIED = "denied"
    ERROR = "error"


@dataclass(frozen=True)
class Answer:
    """What to send back: the HTTP status, the JSON body, and the outcome for metrics."""

    status: int
    body: dict[str, Any]
    result: Result
    warnings: list[str] = field(default_factory=list)


# How the validator sees queues: a view (None: skip the check) and a warning to pass on.
QueueLookup = Callable[[], tuple[QueueView | None, str | None]]


def error_body(status: int, message: str) -> Answer:
    """A non-review answer (400/413/415): a JSON error, never an AdmissionReview."""
    return Answer(status, {"error": message, "code": status}, Result.ERROR)


def _response(review: dict[str, Any], uid: str, response: dict[str, Any], result: Result) -> Answer:
    version = review.get("apiVersion")
    body = {
        "apiVersion": version if version in ADMISSION_VERSIONS else ADMISSION_V1,
        "kind": "AdmissionReview",
        "response": {"uid": uid, **response},
    }
    return Answer(200, body, result, list(response.get("warnings", [])))


def _denial(
    review: dict[str, Any],
    uid: str,
    errors: list[FieldError],
    request: dict[str, Any],
    warnings: list[str] | None = None,
) -> Answer:
    obj = request.get("object")
    name = ""
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        name = str(obj["metadata"].get("name") or "")
    status = {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": render(errors),
        "details": {
            "name": name or str(request.get("name") or ""),
            "group": labels.BATCH_GROUP,
            "kind": labels.JOB_KIND,
            "causes": [e.as_cause() for e in errors],
        },
    }
    response: dict[str, Any] = {"allowed": False, "status": status}
    if warnings:
        response["warnings"] = warnings
    return _response(review, uid, response, Result.DENIED)


def _refusal(review: dict[str, Any], uid: str, message: str, code: int = 400) -> Answer:
    """A denial that is not about the object's fields (wrong resource, operation…)."""
    status = {"status": "Failure", "code": code, "reason": "BadRequest", "message": message}
    return _response(review, uid, {"allowed": False, "status": status}, Result.DENIED)


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


def depth(value: Any) -> int:
    """How deep a decoded JSON value nests (a scalar is 0, `[]` and `{}` are 1); iterative, so
    it cannot itself run out of stack."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        node, level = pending.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            deepest = max(deepest, level)
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_DEPTH:
            return deepest
        pending.extend((child, level + 1) for child in children)
    return deepest


def decode(body: bytes) -> tuple[dict[str, Any], dict[str, Any], str] | Answer:
    """The review, its request and uid; or the 400 answer for a body that is not a review."""
    try:
        review = loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return error_body(400, f"the body is not JSON: {exc}")
    except RecursionError:
        return error_body(400, f"the body is not an AdmissionReview: {TOO_DEEP}")
    if not isinstance(review, dict):
        return error_body(400, "the body is not an AdmissionReview: expected a JSON object")
    request = review.get("request")
    if not isinstance(request, dict):
        return error_body(400, "the body is not an AdmissionReview: request is missing")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        return error_body(400, "the body is not an AdmissionReview: request.uid is missing")
    # Nesting needs an opening bracket per level: most reviews cannot be too deep, and counting
    # bytes costs far less than walking the decoded tree.
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and depth(review) > MAX_DEPTH:
        return _refusal(review, uid, TOO_DEEP)
    return review, request, uid


def _job_review(body: bytes) -> tuple[dict[str, Any], dict[str, Any], str] | Answer:
    """The review, its request and uid when the body reviews a Job; otherwise the answer."""
    decoded = decode(body)
    if isinstance(decoded, Answer):
        return decoded
    review, request, uid = decoded
    if problem := _expected_resource(request):
        return _refusal(review, uid, problem)
    return decoded


def mutation(obj: dict[str, Any], scheduler_name: str) -> tuple[str, bool]:
    """The mutation patch of `obj`, as JSON in base64 ("" when there is none), and whether the
    CRD's schema would refuse a pod template or volume claim of its spec (`refused_by_schema`).

    Defaulting reads and writes `spec` alone, so both are functions of the spec and the
    scheduler name: they are worked out once per distinct spec and kept by the spec's digest.
    """
    spec = obj.get("spec")

    def work() -> tuple[str, bool]:
        patch = mutation_patch(obj, scheduler_name)
        return (base64.b64encode(dumps(patch)).decode() if patch else "", refused_by_schema(spec))

    encoded = memo.encoding(spec) if isinstance(spec, dict) else None
    if encoded is None:
        return work()
    return MEMO.recall(memo.digest(PATCH_TAG, scheduler_name.encode(), encoded), work)


def encoded_patch(obj: dict[str, Any], scheduler_name: str) -> str:
    """The mutation patch of `obj`, as JSON in base64 ("" when there is none)."""
    return mutation(obj, scheduler_name)[0]


def mutate(body: bytes, settings: Settings, queues: QueueLookup) -> Answer:
    opened = _job_review(body)
    if isinstance(opened, Answer):
        return opened
    review, request, uid = opened
    operation = request.get("operation")
    if operation != "CREATE":
        return _refusal(review, uid, f"expected operation CREATE, got {operation!r}")
    obj = request.get("object")
    reading = read_job(obj)
    if not isinstance(obj, dict):
        return _denial(review, uid, sort_errors(obj, reading.errors), request)
    encoded, refused = mutation(obj, settings.scheduler_name)
    if reading.errors or refused:
        # The CRD's schema would refuse the Job before the validating webhook sees it, naming
        # only its own problems: answer now, with every problem the validation finds.
        view, warning = queues()
        errors = validate_create(obj, view, settings, MEMO.recall)
        if errors:
            warnings = [warning] if warning else []
            return _denial(review, uid, errors, request, [*warnings, *job_warnings(obj)])
    response: dict[str, Any] = {"allowed": True}
    if encoded:
        response["patchType"] = "JSONPatch"
        response["patch"] = encoded
    return _response(review, uid, response, Result.ALLOWED)


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
        return _refusal(review, uid, f"expected operation CREATE or UPDATE, got {operation!r}")
    if errors:
        return _denial(review, uid, errors, request, warnings)
    response: dict[str, Any] = {"allowed": True}
    if warnings:
        response["warnings"] = warnings
    return _response(review, uid, response, Result.ALLOWED)


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
        return _refusal(
            review, uid, f"the webhook could not evaluate the request: {type(exc).__name__}", 500
        )
