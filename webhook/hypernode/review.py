"""AdmissionReviews of HyperNodes (`/hypernodes/validate`), on CREATE and UPDATE: the members
and their selectors."""

from __future__ import annotations

from typing import Final

from shared.models.topology import HYPERNODE_KIND, TOPOLOGY_GROUP, TOPOLOGY_VERSION
from webhook.admission import Answer, Kind, QueueLookup
from webhook.clusterlookups import ClusterLookups
from webhook.hypernode.validation import validate_hypernode
from webhook.objectreview import Target, answer_verdict, open_request
from webhook.settings import Settings

HYPERNODE: Final = Target(TOPOLOGY_GROUP, TOPOLOGY_VERSION, "hypernodes", HYPERNODE_KIND)


def answer(
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    req = open_request(body, HYPERNODE, ("CREATE", "UPDATE"))
    if isinstance(req, Answer):
        return req
    return answer_verdict(req, HYPERNODE, validate_hypernode(req.object))
