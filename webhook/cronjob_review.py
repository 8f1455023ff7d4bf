"""AdmissionReviews of CronJobs: bytes in, an Answer out (no I/O), like `webhook.review` for
Jobs. The routes are registered next to the Job ones in `webhook.app`."""

from __future__ import annotations

import base64
import json
from typing import Any, Final

from shared import labels
from shared.fielderrors import render
from shared.models.cronjob import CRONJOB_KIND
from webhook.cronjobs import mutation_patch, validate_cronjob
from webhook.review import (
    ADMISSION_V1,
    ADMISSION_VERSIONS,
    Answer,
    Kind,
    QueueLookup,
    Result,
    decode,
)
from webhook.settings import Settings

MUTATE_PATH: Final = labels.CRONJOB_MUTATE_PATH
VALIDATE_PATH: Final = labels.CRONJOB_VALIDATE_PATH
CRONJOB_RESOURCE: Final = {
    "group": labels.BATCH_GROUP,
    "version": labels.BATCH_VERSION,
    "resource": "cronjobs",
}


def _respond(review: dict[str, Any], uid: str, response: dict[str, Any], result: Result) -> Answer:
    version = review.get("apiVersion")
    body = {
        "apiVersion": version if version in ADMISSION_VERSIONS else ADMISSION_V1,
        "kind": "AdmissionReview",
        "response": {"uid": uid, **response},
    }
    return Answer(200, body, result)


def _refuse(review: dict[str, Any], uid: str, message: str) -> Answer:
    status = {"status": "Failure", "code": 400, "reason": "BadRequest", "message": message}
    return _respond(review, uid, {"allowed": False, "status": status}, Result.DENIED)


def answer(kind: Kind, body: bytes, settings: Settings, _queues: QueueLookup) -> Answer:
    """Mutate (CREATE) or validate (CREATE, UPDATE) one CronJob review."""
    decoded = decode(body)
    if isinstance(decoded, Answer):
        return decoded
    review, request, uid = decoded
    resource = request.get("resource")
    if not isinstance(resource, dict) or any(
        resource.get(k) != v for k, v in CRONJOB_RESOURCE.items()
    ):
        return _refuse(
            review, uid, f"expected resource batch.volcano.sh/v1alpha1 cronjobs, got {resource!r}"
        )
    operation = request.get("operation")
    obj = request.get("object")
    allowed = ("CREATE",) if kind is Kind.MUTATE else ("CREATE", "UPDATE")
    if operation not in allowed:
        return _refuse(review, uid, f"expected operation {' or '.join(allowed)}, got {operation!r}")
    if kind is Kind.MUTATE:
        if not isinstance(obj, dict):
            return _refuse(review, uid, "the request has no CronJob object")
        response: dict[str, Any] = {"allowed": True}
        patch = mutation_patch(obj, settings)
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        return _respond(review, uid, response, Result.ALLOWED)
    errors = validate_cronjob(obj, settings)
    if not errors:
        return _respond(review, uid, {"allowed": True}, Result.ALLOWED)
    name = ""
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        name = str(obj["metadata"].get("name") or "")
    status = {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": render(errors),
        "details": {
            "name": name,
            "group": labels.BATCH_GROUP,
            "kind": CRONJOB_KIND,
            "causes": [e.as_cause() for e in errors],
        },
    }
    return _respond(review, uid, {"allowed": False, "status": status}, Result.DENIED)
