"""AdmissionReviews of Volcano's other objects, at the paths of Volcano's webhook manager:
Queues (`/queues/mutate`, `/queues/validate`), PodGroups (`/podgroups/mutate`,
`/podgroups/validate`), Pods (`/pods/validate`) and HyperNodes (`/hypernodes/validate`).

Bytes in, an Answer out, like `webhook.review` for Jobs; the rules are in `webhook.rules`. The two
API reads some requests need (a namespace, a queue's PodGroups) come through `ClusterLookups`;
when one fails the request is admitted with a warning that says what was not checked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

import jsonpatch

from shared import labels, quantity
from shared.fielderrors import FieldError
from shared.models.scheduling import Queue
from shared.models.topology import HYPERNODE_KIND, TOPOLOGY_GROUP, TOPOLOGY_VERSION
from webhook.admission import (
    Answer,
    Kind,
    QueueLookup,
    allow,
    decode,
    deny,
    encode_patch,
    object_name,
    refuse,
)
from webhook.clusterlookups import ClusterLookups, ClusterReadError
from webhook.rules import hypernodes, podgroups, pods, queues
from webhook.rules.verdict import Verdict
from webhook.settings import SCHEDULING_GATES_QUEUE_ADMISSION, Settings
from webhook.validation import QueueView

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    group: str
    version: str
    resource: str
    kind: str

    def describe(self) -> str:
        return f"{self.group or 'core'}/{self.version} {self.resource}"


QUEUE: Final = Target(labels.SCHEDULING_GROUP, labels.SCHEDULING_VERSION, "queues", "Queue")
PODGROUP: Final = Target(
    labels.SCHEDULING_GROUP, labels.SCHEDULING_VERSION, "podgroups", "PodGroup"
)
POD: Final = Target("", "v1", "pods", "Pod")
HYPERNODE: Final = Target(TOPOLOGY_GROUP, TOPOLOGY_VERSION, "hypernodes", HYPERNODE_KIND)


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


def _refuse(req: Request, message: str) -> Answer:
    return refuse(req.review, req.uid, message)


def _allow(req: Request, warnings: list[str], original: Any = None, patched: Any = None) -> Answer:
    patch = "" if patched is None else encode_patch(jsonpatch.make_patch(original, patched).patch)
    return allow(req.review, req.uid, warnings, patch)


def _deny(req: Request, target: Target, errors: list[FieldError], warnings: list[str]) -> Answer:
    return deny(
        req.review,
        req.uid,
        req.request,
        errors,
        group=target.group,
        kind=target.kind,
        warnings=warnings,
    )


def _verdict(req: Request, target: Target, verdict: Verdict) -> Answer:
    if verdict.errors:
        return _deny(req, target, verdict.errors, verdict.warnings)
    return _allow(req, verdict.warnings)


def _open(body: bytes, target: Target, operations: tuple[str, ...]) -> Request | Answer:
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


ObjectAnswerFn = Callable[[Kind, bytes, Settings, QueueLookup, "ClusterLookups | None"], Answer]


def answer_queue(
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    operations = ("CREATE",) if kind is Kind.MUTATE else ("CREATE", "UPDATE", "DELETE")
    req = _open(body, QUEUE, operations)
    if isinstance(req, Answer):
        return req
    if kind is Kind.MUTATE:
        return _allow(req, [], req.object, queues.default_queue(req.object))
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
        facts = queues.DeletionFacts(
            name=name,
            state=status.get("state") if isinstance(status, dict) else None,
            children=_staying_children(view, name) if view is not None else [],
            podgroups=podgroup_names,
            require_closed=settings.queue_delete_requires_closed,
        )
        return _verdict(req, QUEUE, Verdict(queues.validate_deletion(facts), warnings))
    old: Any = req.old_object if req.operation == "UPDATE" else None
    errors = queues.validate_queue(req.object, old, _queue_context(req.object, view))
    return _verdict(req, QUEUE, Verdict(errors, warnings))


@runtime_checkable
class HierarchyView(Protocol):
    def hierarchies(self) -> dict[str, str]: ...


# Deeper parent chains than this are not followed (a cycle stored without the webhook ends too).
MAX_QUEUE_DEPTH: Final = 32


def _queue_context(queue: dict[str, Any], view: QueueView | None) -> queues.QueueContext:
    if view is None:
        return queues.QueueContext()
    name = str((queue.get("metadata") or {}).get("name") or "")
    parent = (queue.get("spec") or {}).get("parent")
    parent_exists = None
    ancestors: list[tuple[str, dict[str, Any]]] = []
    if isinstance(parent, str) and parent:
        parent_exists = view.get(parent) is not None
        seen = {name}
        current: str | None = parent
        while current and current != labels.ROOT_QUEUE and current not in seen:
            if len(ancestors) >= MAX_QUEUE_DEPTH:
                break
            found = view.get(current)
            if found is None:
                break
            seen.add(current)
            ancestors.append((current, found.spec.capability or {}))
            current = found.spec.parent
    hierarchies = view.hierarchies() if isinstance(view, HierarchyView) else {}
    hierarchies.pop(name, None)
    parent_queue = view.get(parent) if isinstance(parent, str) and parent else None
    parent_shares = None
    siblings: list[queues.QueueShares] = []
    parent_pods = 0
    if parent_queue is not None and parent != labels.ROOT_QUEUE:
        parent_shares = _shares(parent_queue)
        siblings = [_shares(q) for q in _queues(view, view.children(str(parent))) if q.name != name]
        if not siblings:
            parent_pods = _allocated_pods(parent_queue)
    # Volcano leaves `root` out of the hierarchy's checks: every top-level queue is its child.
    below = bool(name) and name != labels.ROOT_QUEUE
    children = _queues(view, view.children(name)) if below else []
    return queues.QueueContext(
        parent_exists,
        ancestors,
        hierarchies,
        parent_shares=parent_shares,
        siblings=siblings,
        children=[_shares(c) for c in children],
        descendant_capabilities=[
            q.spec.capability or {} for q in (_descendants(view, name) if below else [])
        ],
        parent_pods=parent_pods,
    )


def _allocated_pods(queue: Queue) -> int:
    allocated = (queue.status.allocated or {}) if queue.status else {}
    amount = quantity.try_parse(allocated.get("pods"))
    return int(amount) if amount is not None and amount > 0 else 0


def _staying_children(view: QueueView, name: str) -> list[str]:
    """The child queues that are not being deleted: a child deleted just before its parent (as
    Volcano's suites clean up) does not hold the parent back."""
    return [
        q.name
        for q in _queues(view, view.children(name))
        if not q.metadata.get("deletionTimestamp")
    ]


def _shares(queue: Queue) -> queues.QueueShares:
    guarantee = queue.spec.guarantee.resource if queue.spec.guarantee else None
    return queues.QueueShares(queue.name, guarantee or {}, queue.spec.deserved or {})


def _queues(view: QueueView, names: list[str]) -> list[Queue]:
    return [q for q in (view.get(n) for n in names) if q is not None]


def _descendants(view: QueueView, name: str) -> list[Queue]:
    """Every queue below `name` (a stored cycle, or a chain deeper than MAX_QUEUE_DEPTH, ends)."""
    found: list[Queue] = []
    seen = {name}
    level = [name] if name else []
    for _ in range(MAX_QUEUE_DEPTH):
        below = _queues(view, [c for n in level for c in view.children(n)])
        below = [q for q in below if q.name not in seen]
        if not below:
            break
        seen.update(q.name for q in below)
        found += below
        level = [q.name for q in below]
    return found


def answer_podgroup(
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    req = _open(body, PODGROUP, ("CREATE",))
    if isinstance(req, Answer):
        return req
    obj: dict[str, Any] = req.object
    if kind is Kind.MUTATE:
        namespace = str(
            req.request.get("namespace") or (obj.get("metadata") or {}).get("namespace") or ""
        )
        spec: dict[str, Any] = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
        if (
            cluster is None
            or not namespace
            or spec.get("queue") not in (None, "", podgroups.DEFAULT_QUEUE)
        ):
            return _allow(req, [])
        try:
            namespace_queue = cluster.namespace_queue(namespace)
        except ClusterReadError as exc:
            return _allow(
                req, [f"spec.queue: the namespace's queue annotation was not read: {exc}"]
            )
        return _allow(req, [], obj, podgroups.default_podgroup_queue(obj, namespace_queue))
    view, skipped = queue_lookup()
    warnings = [skipped] if skipped else []
    spec = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    queue_name = spec.get("queue")
    queue = view.get(str(queue_name)) if view is not None and queue_name else None
    errors = podgroups.validate_podgroup(obj, queue, check_queue=view is not None)
    return _verdict(req, PODGROUP, Verdict(errors, warnings))


def answer_pod(
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    req = _open(body, POD, ("CREATE",))
    if isinstance(req, Answer):
        return req
    if kind is Kind.MUTATE:
        if SCHEDULING_GATES_QUEUE_ADMISSION not in settings.feature_gates:
            return _allow(req, [])
        return _allow(req, [], req.object, pods.gated_for_queue_allocation(req.object))
    return _verdict(req, POD, pods.validate_pod(req.object, (settings.scheduler_name,)))


def answer_hypernode(
    kind: Kind,
    body: bytes,
    settings: Settings,
    queue_lookup: QueueLookup,
    cluster: ClusterLookups | None,
) -> Answer:
    req = _open(body, HYPERNODE, ("CREATE", "UPDATE"))
    if isinstance(req, Answer):
        return req
    return _verdict(req, HYPERNODE, hypernodes.validate_hypernode(req.object))


# path -> (kind, answer function)
ROUTES: Final[dict[str, tuple[Kind, ObjectAnswerFn]]] = {
    labels.QUEUE_MUTATE_PATH: (Kind.MUTATE, answer_queue),
    labels.QUEUE_VALIDATE_PATH: (Kind.VALIDATE, answer_queue),
    labels.PODGROUP_MUTATE_PATH: (Kind.MUTATE, answer_podgroup),
    labels.PODGROUP_VALIDATE_PATH: (Kind.VALIDATE, answer_podgroup),
    labels.POD_MUTATE_PATH: (Kind.MUTATE, answer_pod),
    labels.POD_VALIDATE_PATH: (Kind.VALIDATE, answer_pod),
    labels.HYPERNODE_VALIDATE_PATH: (Kind.VALIDATE, answer_hypernode),
}


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
