"""AdmissionReviews of JobFlows and JobTemplates: bytes in, an Answer out (no I/O), like
`webhook.cronjob_review`. The paths are Volcano's (`/jobflows/validate`); the routes are
registered next to the Job ones in `webhook.app`."""

from __future__ import annotations

from typing import Any, Final

from shared.fielderrors import render
from shared.models.flow import (
    FLOW_GROUP,
    FLOW_VERSION,
    JOBFLOW_KIND,
    JOBFLOW_VALIDATE_PATH,
    JOBTEMPLATE_VALIDATE_PATH,
)
from webhook.jobflows import jobtemplate_warnings, validate_jobflow
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

VALIDATE_JOBFLOW_PATH: Final = JOBFLOW_VALIDATE_PATH
VALIDATE_JOBTEMPLATE_PATH: Final = JOBTEMPLATE_VALIDATE_PATH
OPERATIONS: Final = ("CREATE", "UPDATE")


def _respond(review: dict[str, Any], uid: str, response: dict[str, Any], result: Result) -> Answer:
    version = review.get("apiVersion")
    body = {
        "apiVersion": version if version in ADMISSION_VERSIONS else ADMISSION_V1,
        "kind": "AdmissionReview",
        "response": {"uid": uid, **response},
    }
    return Answer(200, body, result, list(response.get("warnings", [])))


def _refuse(review: dict[str, Any], uid: str, message: str) -> Answer:
    status = {"status": "Failure", "code": 400, "reason": "BadRequest", "message": message}
    return _respond(review, uid, {"allowed": False, "status": status}, Result.DENIED)


def _allow(review: dict[str, Any], uid: str, warnings: list[str]) -> Answer:
    response: dict[str, Any] = {"allowed": True}
    if warnings:
        response["warnings"] = warnings
    return _respond(review, uid, response, Result.ALLOWED)


def _request(
    body: bytes, plural: str
) -> tuple[dict[str, Any], str, dict[str, Any] | None] | Answer:
    """The review, its uid and the object under review; or the refusal of a foreign request."""
    decoded = decode(body)
    if isinstance(decoded, Answer):
        return decoded
    review, request, uid = decoded
    resource = request.get("resource")
    wanted = {"group": FLOW_GROUP, "version": FLOW_VERSION, "resource": plural}
    if not isinstance(resource, dict) or any(resource.get(k) != v for k, v in wanted.items()):
        return _refuse(
            review, uid, f"expected resource {FLOW_GROUP}/{FLOW_VERSION} {plural}, got {resource!r}"
        )
    operation = request.get("operation")
    if operation not in OPERATIONS:
        # Volcano's own words for the same refusal.
        return _refuse(
            review, uid, f"expect operation to be 'CREATE' or 'UPDATE', got {operation!r}"
        )
    obj = request.get("object")
    return review, uid, obj if isinstance(obj, dict) else None


def answer_jobflow(_kind: Kind, body: bytes, _settings: Settings, _queues: QueueLookup) -> Answer:
    """Validate one JobFlow (CREATE, UPDATE): its flows form a DAG."""
    read = _request(body, "jobflows")
    if isinstance(read, Answer):
        return read
    review, uid, obj = read
    errors, warnings = validate_jobflow(obj)
    if not errors:
        return _allow(review, uid, warnings)
    name = str(((obj or {}).get("metadata") or {}).get("name") or "")
    status = {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": render(errors),
        "details": {
            "name": name,
            "group": FLOW_GROUP,
            "kind": JOBFLOW_KIND,
            "causes": [e.as_cause() for e in errors],
        },
    }
    response: dict[str, Any] = {"allowed": False, "status": status}
    if warnings:
        response["warnings"] = warnings
    return _respond(review, uid, response, Result.DENIED)


def answer_jobtemplate(
    _kind: Kind, body: bytes, settings: Settings, _queues: QueueLookup
) -> Answer:
    """Admit one JobTemplate (CREATE, UPDATE), warning about what its Jobs would be refused for."""
    read = _request(body, "jobtemplates")
    if isinstance(read, Answer):
        return read
    review, uid, obj = read
    return _allow(review, uid, jobtemplate_warnings(obj, settings))
