"""AdmissionReviews of JobFlows and JobTemplates: bytes in, an Answer out (no I/O), like
`webhook.cronjob.review`. The paths are Volcano's (`/jobflows/validate`); the routes are
registered next to the Job ones in `webhook.app`."""

from __future__ import annotations

from typing import Any, Final

from shared.models.flow import (
    FLOW_GROUP,
    FLOW_VERSION,
    JOBFLOW_KIND,
    JOBFLOW_VALIDATE_PATH,
    JOBTEMPLATE_VALIDATE_PATH,
)
from webhook.admission import (
    Answer,
    Kind,
    QueueLookup,
    allow,
    decode,
    deny,
    refuse,
)
from webhook.jobflow.validation import jobtemplate_warnings, validate_jobflow
from webhook.settings import Settings

VALIDATE_JOBFLOW_PATH: Final = JOBFLOW_VALIDATE_PATH
VALIDATE_JOBTEMPLATE_PATH: Final = JOBTEMPLATE_VALIDATE_PATH
OPERATIONS: Final = ("CREATE", "UPDATE")


def _request(
    body: bytes, plural: str
) -> tuple[dict[str, Any], str, dict[str, Any], dict[str, Any] | None] | Answer:
    """The review, its uid, its request and the object under review; or the refusal of a
    foreign request."""
    decoded = decode(body)
    if isinstance(decoded, Answer):
        return decoded
    review, request, uid = decoded
    resource = request.get("resource")
    wanted = {"group": FLOW_GROUP, "version": FLOW_VERSION, "resource": plural}
    if not isinstance(resource, dict) or any(resource.get(k) != v for k, v in wanted.items()):
        return refuse(
            review, uid, f"expected resource {FLOW_GROUP}/{FLOW_VERSION} {plural}, got {resource!r}"
        )
    operation = request.get("operation")
    if operation not in OPERATIONS:
        # Volcano's own words for the same refusal.
        return refuse(
            review, uid, f"expect operation to be 'CREATE' or 'UPDATE', got {operation!r}"
        )
    obj = request.get("object")
    return review, uid, request, obj if isinstance(obj, dict) else None


def answer_jobflow(_kind: Kind, body: bytes, _settings: Settings, _queues: QueueLookup) -> Answer:
    """Validate one JobFlow (CREATE, UPDATE): its flows form a DAG."""
    read = _request(body, "jobflows")
    if isinstance(read, Answer):
        return read
    review, uid, request, obj = read
    errors, warnings = validate_jobflow(obj)
    if not errors:
        return allow(review, uid, warnings)
    return deny(
        review, uid, request, errors, group=FLOW_GROUP, kind=JOBFLOW_KIND, warnings=warnings
    )


def answer_jobtemplate(
    _kind: Kind, body: bytes, settings: Settings, _queues: QueueLookup
) -> Answer:
    """Admit one JobTemplate (CREATE, UPDATE), warning about what its Jobs would be refused for."""
    read = _request(body, "jobtemplates")
    if isinstance(read, Answer):
        return read
    review, uid, _, obj = read
    return allow(review, uid, jobtemplate_warnings(obj, settings))
