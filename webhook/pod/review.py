"""AdmissionReviews of Pods (`/pods/mutate`, `/pods/validate`), on CREATE: the queue allocation
gate (with its feature gate on), and the disruption budget annotations of the gang scheduler's
pods."""

from __future__ import annotations

from typing import Final

from webhook.admission import Answer, Kind, QueueLookup
from webhook.clusterlookups import ClusterLookups
from webhook.objectreview import Target, allow_request, answer_verdict, open_request
from webhook.pod.mutation import gated_for_queue_allocation
from webhook.pod.validation import validate_pod
from webhook.settings import SCHEDULING_GATES_QUEUE_ADMISSION, Settings

POD: Final = Target("", "v1", "pods", "Pod")


def answer(
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    req = open_request(body, POD, ("CREATE",))
    if isinstance(req, Answer):
        return req
    if kind is Kind.MUTATE:
        if SCHEDULING_GATES_QUEUE_ADMISSION not in settings.feature_gates:
            return allow_request(req, [])
        return allow_request(req, [], req.object, gated_for_queue_allocation(req.object))
    return answer_verdict(req, POD, validate_pod(req.object, (settings.scheduler_name,)))
