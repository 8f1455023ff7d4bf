"""AdmissionReviews of CronJobs: bytes in, an Answer out (no I/O), like `webhook.job.review` for
Jobs. The routes are registered next to the Job ones in `webhook.app`."""

from __future__ import annotations

from typing import Final

from shared import labels
from shared.models.cronjob import CRONJOB_KIND
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
from webhook.cronjob.defaulting import mutation_patch
from webhook.cronjob.validation import validate_cronjob
from webhook.settings import Settings

MUTATE_PATH: Final = labels.CRONJOB_MUTATE_PATH
VALIDATE_PATH: Final = labels.CRONJOB_VALIDATE_PATH
CRONJOB_RESOURCE: Final = {
    "group": labels.BATCH_GROUP,
    "version": labels.BATCH_VERSION,
    "resource": "cronjobs",
}


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
        return refuse(
            review, uid, f"expected resource batch.volcano.sh/v1alpha1 cronjobs, got {resource!r}"
        )
    operation = request.get("operation")
    obj = request.get("object")
    allowed = ("CREATE",) if kind is Kind.MUTATE else ("CREATE", "UPDATE")
    if operation not in allowed:
        return refuse(review, uid, f"expected operation {' or '.join(allowed)}, got {operation!r}")
    if kind is Kind.MUTATE:
        if not isinstance(obj, dict):
            return refuse(review, uid, "the request has no CronJob object")
        return allow(review, uid, patch=encode_patch(mutation_patch(obj, settings)))
    errors = validate_cronjob(obj, settings)
    if not errors:
        return allow(review, uid)
    return deny(review, uid, request, errors, group=labels.BATCH_GROUP, kind=CRONJOB_KIND)
