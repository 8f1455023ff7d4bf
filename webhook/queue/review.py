"""AdmissionReviews of Queues (`/queues/mutate`, `/queues/validate`): Volcano's defaults on
CREATE; the fields and the hierarchy on CREATE and UPDATE; what may be deleted on DELETE (the
queue's PodGroups read through `ClusterLookups`)."""

from __future__ import annotations

from typing import Any, Final

from shared import labels
from webhook.admission import Answer, Kind, QueueLookup, object_name
from webhook.clusterlookups import ClusterLookups, ClusterReadError
from webhook.objectreview import Target, allow_request, answer_verdict, open_request
from webhook.queue.context import queue_context, staying_children
from webhook.queue.defaulting import default_queue
from webhook.queue.deletion import DeletionFacts, validate_deletion
from webhook.queue.validation import validate_queue
from webhook.settings import Settings
from webhook.verdict import Verdict

QUEUE: Final = Target(labels.SCHEDULING_GROUP, labels.SCHEDULING_VERSION, "queues", "Queue")


def answer(
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    operations = ("CREATE",) if kind is Kind.MUTATE else ("CREATE", "UPDATE", "DELETE")
    req = open_request(body, QUEUE, operations)
    if isinstance(req, Answer):
        return req
    if kind is Kind.MUTATE:
        return allow_request(req, [], req.object, default_queue(req.object))
    view, skipped = queue_lookup()
    warnings = [skipped] if skipped else []
    if req.operation == "DELETE":
        stored = req.old_object if isinstance(req.old_object, dict) else {}
        status = stored.get("status") if isinstance(stored.get("status"), dict) else {}
        name = str(req.request.get("name") or object_name(req.request))
        podgroup_names: list[str] | None = None
        if cluster is not None:
            try:
                podgroup_names = cluster.queue_podgroups(name)
            except ClusterReadError as exc:
                warnings.append(f"the queue's PodGroups were not checked: {exc}")
        facts = DeletionFacts(
            name=name,
            state=status.get("state") if isinstance(status, dict) else None,
            children=staying_children(view, name) if view is not None else [],
            podgroups=podgroup_names,
            require_closed=settings.queue_delete_requires_closed,
        )
        return answer_verdict(req, QUEUE, Verdict(validate_deletion(facts), warnings))
    old: Any = req.old_object if req.operation == "UPDATE" else None
    errors = validate_queue(req.object, old, queue_context(req.object, view))
    return answer_verdict(req, QUEUE, Verdict(errors, warnings))
