"""AdmissionReviews of PodGroups (`/podgroups/mutate`, `/podgroups/validate`), on CREATE: the
queue from the namespace's annotation (read through `ClusterLookups`), then only into an Open
queue."""

from __future__ import annotations

from typing import Any, Final

from shared import labels
from webhook.admission import Answer, Kind, QueueLookup
from webhook.clusterlookups import ClusterLookups, ClusterReadError
from webhook.objectreview import Target, allow_request, answer_verdict, open_request
from webhook.podgroup.defaulting import DEFAULT_QUEUE, default_podgroup_queue
from webhook.podgroup.validation import validate_podgroup
from webhook.settings import Settings
from webhook.verdict import Verdict

PODGROUP: Final = Target(
    labels.SCHEDULING_GROUP, labels.SCHEDULING_VERSION, "podgroups", "PodGroup"
)


def answer(
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    req = open_request(body, PODGROUP, ("CREATE",))
    if isinstance(req, Answer):
        return req
    obj: dict[str, Any] = req.object
    if kind is Kind.MUTATE:
        namespace = str(
            req.request.get("namespace") or (obj.get("metadata") or {}).get("namespace") or ""
        )
        spec: dict[str, Any] = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
        if cluster is None or not namespace or spec.get("queue") not in (None, "", DEFAULT_QUEUE):
            return allow_request(req, [])
        try:
            namespace_queue = cluster.namespace_queue(namespace)
        except ClusterReadError as exc:
            return allow_request(
                req, [f"spec.queue: the namespace's queue annotation was not read: {exc}"]
            )
        return allow_request(req, [], obj, default_podgroup_queue(obj, namespace_queue))
    view, skipped = queue_lookup()
    warnings = [skipped] if skipped else []
    spec = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    queue_name = spec.get("queue")
    queue = view.get(str(queue_name)) if view is not None and queue_name else None
    errors = validate_podgroup(obj, queue, check_queue=view is not None)
    return answer_verdict(req, PODGROUP, Verdict(errors, warnings))
