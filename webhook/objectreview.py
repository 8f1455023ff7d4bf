"""What the AdmissionReviews of Volcano's other objects share (`webhook.queue.review`,
`webhook.podgroup.review`, `webhook.pod.review`, `webhook.hypernode.review`, at the paths of
Volcano's webhook manager): the resource a path serves, the request opened and checked against
it, the answers built from a rule's `Verdict`, and the guard that turns a failure into a denial.

Bytes in, an Answer out, like `webhook.job.review` for Jobs. The two API reads some requests need
(a namespace, a queue's PodGroups) come through `ClusterLookups`; when one fails the request is
admitted with a warning that says what was not checked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonpatch

from shared.fielderrors import FieldError
from webhook.admission import (
    Answer,
    Kind,
    QueueLookup,
    allow,
    decode,
    deny,
    encode_patch,
    refuse,
)
from webhook.clusterlookups import ClusterLookups
from webhook.settings import Settings
from webhook.verdict import Verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    group: str
    version: str
    resource: str
    kind: str

    def describe(self) -> str:
        return f"{self.group or 'core'}/{self.version} {self.resource}"


@dataclass(frozen=True)
class Request:
    review: dict[str, Any]
    request: dict[str, Any]
    uid: str
    operation: str

    @property
    def object(self) -> Any:
        return self.request.get("object")

    @property
    def old_object(self) -> Any:
        return self.request.get("oldObject")


ObjectAnswerFn = Callable[[Kind, bytes, Settings, QueueLookup, "ClusterLookups | None"], Answer]


def _refuse(req: Request, message: str) -> Answer:
    return refuse(req.review, req.uid, message)


def allow_request(
    req: Request, warnings: list[str], original: Any = None, patched: Any = None
) -> Answer:
    """Allowed, with the JSON Patch from `original` to `patched` when `patched` is given."""
    patch = "" if patched is None else encode_patch(jsonpatch.make_patch(original, patched).patch)
    return allow(req.review, req.uid, warnings, patch)


def deny_request(
    req: Request, target: Target, errors: list[FieldError], warnings: list[str]
) -> Answer:
    return deny(
        req.review,
        req.uid,
        req.request,
        errors,
        group=target.group,
        kind=target.kind,
        warnings=warnings,
    )


def answer_verdict(req: Request, target: Target, verdict: Verdict) -> Answer:
    if verdict.errors:
        return deny_request(req, target, verdict.errors, verdict.warnings)
    return allow_request(req, verdict.warnings)


def open_request(body: bytes, target: Target, operations: tuple[str, ...]) -> Request | Answer:
    """The request when the body reviews `target` itself in one of `operations` (with an object
    unless it deletes); otherwise the answer."""
    decoded = decode(body)
    if isinstance(decoded, Answer):
        return decoded
    review, request, uid = decoded
    req = Request(review, request, uid, str(request.get("operation") or ""))
    resource = request.get("resource")
    if not isinstance(resource, dict) or (
        resource.get("group", ""),
        resource.get("version"),
        resource.get("resource"),
    ) != (target.group, target.version, target.resource):
        return _refuse(req, f"expected resource {target.describe()}, got {resource!r}")
    if request.get("subResource"):
        return _refuse(
            req,
            f"expected the {target.resource} resource itself, got its subresource "
            f"{request.get('subResource')!r}",
        )
    if req.operation not in operations:
        return _refuse(req, f"expected operation {' or '.join(operations)}, got {req.operation!r}")
    if req.operation != "DELETE" and not isinstance(req.object, dict):
        return _refuse(req, f"the request has no {target.kind} object")
    return req


def guarded(
    answer_fn: ObjectAnswerFn,
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    """Never raises: an unexpected failure on a readable review is a denial that says so."""
    try:
        return answer_fn(kind, body, settings, queue_lookup, cluster)
    except Exception as exc:
        log.exception("admission failed", extra={"webhook": kind.value})
        decoded = decode(body)
        if isinstance(decoded, Answer):
            return decoded
        review, _, uid = decoded
        message = f"the webhook could not evaluate the request: {type(exc).__name__}"
        return refuse(review, uid, message, 500)
