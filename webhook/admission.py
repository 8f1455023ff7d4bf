"""The admission core every review shares: an AdmissionReview's body decoded, and the answers
built from it (allowed, allowed with a patch, denied with field errors, refused, a non-review
error). No I/O: the HTTP layer writes what these return, so the server never answers 5xx."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from shared.fielderrors import FieldError, render
from shared.jsoncodec import dumps, loads
from webhook.queueview import QueueView

ADMISSION_V1: Final = "admission.k8s.io/v1"
ADMISSION_VERSIONS: Final = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
# How deep a review's JSON may nest. A real Job review stays under ~25 levels (review, object,
# spec, tasks, template, affinity terms…); the limit keeps every recursive check far from
# Python's own recursion limit.
MAX_DEPTH: Final = 100
TOO_DEEP: Final = (
    f"JSON nested too deeply: more than {MAX_DEPTH} levels (the webhook's limit); "
    "no Job needs that many"
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
        return refuse(review, uid, TOO_DEEP)
    return review, request, uid


def respond(review: dict[str, Any], uid: str, response: dict[str, Any], result: Result) -> Answer:
    """The AdmissionReview answering `review` (in its own apiVersion when it is one we speak)."""
    version = review.get("apiVersion")
    body = {
        "apiVersion": version if version in ADMISSION_VERSIONS else ADMISSION_V1,
        "kind": "AdmissionReview",
        "response": {"uid": uid, **response},
    }
    return Answer(200, body, result, list(response.get("warnings", [])))


def encode_patch(operations: Sequence[Any]) -> str:
    """A JSON Patch as an AdmissionReview carries it: JSON in base64 ("" for no operation)."""
    return base64.b64encode(dumps(list(operations))).decode() if operations else ""


def allow(
    review: dict[str, Any], uid: str, warnings: Iterable[str] = (), patch: str = ""
) -> Answer:
    """Allowed, with the base64 JSON Patch `patch` when there is one (`encode_patch`)."""
    response: dict[str, Any] = {"allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = patch
    if warnings := list(warnings):
        response["warnings"] = warnings
    return respond(review, uid, response, Result.ALLOWED)


def refuse(review: dict[str, Any], uid: str, message: str, code: int = 400) -> Answer:
    """A denial that is not about the object's fields (wrong resource, operation…; 500: the
    webhook itself failed)."""
    reason = "InternalError" if code >= 500 else "BadRequest"
    status = {"status": "Failure", "code": code, "reason": reason, "message": message}
    return respond(review, uid, {"allowed": False, "status": status}, Result.DENIED)


def object_name(request: dict[str, Any]) -> str:
    """The name of the object under review: its own, the old object's, or the request's."""
    for obj in (request.get("object"), request.get("oldObject")):
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            name = obj["metadata"].get("name")
            if name:
                return str(name)
    return str(request.get("name") or "")


def deny(
    review: dict[str, Any],
    uid: str,
    request: dict[str, Any],
    errors: list[FieldError],
    *,
    group: str,
    kind: str,
    warnings: Iterable[str] = (),
) -> Answer:
    """Denied as kube-apiserver denies an invalid object: 422 Invalid, every field error a
    cause with its path."""
    status = {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": render(errors),
        "details": {
            "name": object_name(request),
            "group": group,
            "kind": kind,
            "causes": [e.as_cause() for e in errors],
        },
    }
    response: dict[str, Any] = {"allowed": False, "status": status}
    if warnings := list(warnings):
        response["warnings"] = warnings
    return respond(review, uid, response, Result.DENIED)
