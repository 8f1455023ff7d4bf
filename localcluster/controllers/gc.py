"""The garbage collector: deletes dependents whose owners are gone and runs the foreground and
orphan deletion finalizers, as kube-controller-manager's garbage collector does.

It watches every resource the server lists (rediscovering when CRDs change), keeps a graph of
ownerReferences, and reacts to each change; a resync every few seconds catches anything missed.
An owner is only judged absent after a live lookup by name and uid, so a dependent created
right after its owner is never collected by mistake.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubeio.workqueue import WorkQueue
from localcluster.controllers.client import ApiClient, ApiError, ClusterAccess, Resource, group_of
from localcluster.controllers.informer import ResourceWatch

logger = logging.getLogger(__name__)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
RESYNC_SECONDS = 10.0
REDISCOVER_SECONDS = 0.5
REDISCOVER_WINDOW = 3.0
#: Like kube's garbage collector, events are neither owners nor dependents worth watching.
IGNORED = frozenset({("", "events"), ("events.k8s.io", "events")})
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")


@dataclass(frozen=True)
class Node:
    """What the graph needs to know about one object."""

    resource: Resource
    namespace: str
    name: str
    uid: str
    owners: tuple[dict[str, Any], ...]
    deleting: bool
    finalizers: tuple[str, ...]

    @classmethod
    def of(cls, resource: Resource, obj: dict[str, Any]) -> Node:
        meta = obj.get("metadata") or {}
        return cls(
            resource=resource,
            namespace=meta.get("namespace") or "",
            name=meta.get("name") or "",
            uid=meta.get("uid") or "",
            owners=tuple(r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)),
            deleting=bool(meta.get("deletionTimestamp")),
            finalizers=tuple(meta.get("finalizers") or []),
        )

    @property
    def path(self) -> str:
        return self.resource.path(self.namespace, self.name)

    def reference_to(self, owner_uid: str) -> dict[str, Any] | None:
        return next((r for r in self.owners if r.get("uid") == owner_uid), None)


@dataclass(frozen=True)
class Decision:
    """What to do with an object that has owners: nothing, drop some references, or delete it."""

    keep_references: list[dict[str, Any]] | None = None
    delete_with: str | None = None  # the propagation policy of the delete


def decide_for_dependent(
    owners: tuple[dict[str, Any], ...], states: dict[str, str], *, has_dependents: bool
) -> Decision:
    """kube's attemptToDeleteItem: `states` maps each owner uid to solid, gone or waiting.

    With a solid owner left, the object stays and loses its references to gone and waiting
    owners. Without one it is deleted: in the foreground when an owner waits for it and it has
    dependents of its own (so the wait covers the whole tree), otherwise in the background.
    """
    solid = [r for r in owners if states.get(str(r.get("uid", ""))) == "solid"]
    waiting = [r for r in owners if states.get(str(r.get("uid", ""))) == "waiting"]
    if solid:
        if len(solid) == len(owners):
            return Decision()
        return Decision(keep_references=solid)
    return Decision(delete_with="Foreground" if waiting and has_dependents else "Background")


class Graph:
    """Objects by uid and the reverse index owner uid → dependent uids (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, Node] = {}
        self._dependents: dict[str, set[str]] = {}

    def get(self, uid: str) -> Node | None:
        with self._lock:
            return self._nodes.get(uid)

    def upsert(self, node: Node) -> Node | None:
        with self._lock:
            old = self._nodes.get(node.uid)
            if old is not None:
                self._unlink(old)
            self._nodes[node.uid] = node
            for ref in node.owners:
                self._dependents.setdefault(str(ref.get("uid", "")), set()).add(node.uid)
            return old

    def remove(self, uid: str) -> Node | None:
        with self._lock:
            old = self._nodes.pop(uid, None)
            if old is not None:
                self._unlink(old)
            return old

    def _unlink(self, node: Node) -> None:
        for ref in node.owners:
            dependents = self._dependents.get(str(ref.get("uid", "")))
            if dependents is not None:
                dependents.discard(node.uid)

    def uids_of(self, resource: Resource) -> list[str]:
        key = (resource.group, resource.plural)
        with self._lock:
            return [
                n.uid for n in self._nodes.values() if (n.resource.group, n.resource.plural) == key
            ]

    def dependents_of(self, uid: str) -> list[Node]:
        with self._lock:
            return [self._nodes[d] for d in self._dependents.get(uid, ()) if d in self._nodes]

    def all_uids(self) -> list[str]:
        with self._lock:
            return list(self._nodes)


class GarbageCollector(threading.Thread):
    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        super().__init__(name="garbage-collector", daemon=True)
        self.access = access
        self.stop = stop
        self.graph = Graph()
        self.queue = WorkQueue()  # kubeio's: deduplicating, per-uid exponential backoff
        self._watches: dict[tuple[str, str], ResourceWatch] = {}
        self._synced: set[tuple[str, str]] = set()
        self._kinds: dict[tuple[str, str], Resource] = {}
        # A CRD event starts a short window of frequent discovery: the new resource is served
        # a moment after the CRD object changes (once it is Established).
        self._rediscover_until = 0.0
        self._lock = threading.Lock()

    # thread main ---------------------------------------------------------------------------

    def run(self) -> None:
        with ApiClient(self.access) as client:
            next_resync = next_discovery = 0.0
            while not self.stop.is_set():
                now = time.monotonic()
                if now >= next_resync:
                    self._discover(client)
                    self._enqueue(self.graph.all_uids())
                    next_resync = now + RESYNC_SECONDS
                    next_discovery = now + REDISCOVER_SECONDS
                elif now < self._rediscover_until and now >= next_discovery:
                    self._discover(client)
                    next_discovery = now + REDISCOVER_SECONDS
                uid = self.queue.get(timeout=0.2)
                if uid is None:
                    continue
                try:
                    self._process(client, uid)
                    self.queue.forget(uid)
                except ApiError as exc:
                    logger.info("garbage collection retried", extra={"uid": uid, "error": str(exc)})
                    self.queue.add_rate_limited(uid)
                except Exception:
                    logger.exception("garbage collection failed", extra={"uid": uid})
                    self.queue.add_after(uid, RESYNC_SECONDS)
                finally:
                    self.queue.done(uid)

    def _enqueue(self, uids: Iterable[str]) -> None:
        for uid in uids:
            if uid:
                self.queue.add(uid)

    def _discover(self, client: ApiClient) -> None:
        try:
            resources = client.discover()
        except ApiError as exc:
            logger.warning("discovery failed", extra={"error": str(exc)})
            return
        with self._lock:
            self._kinds = {(r.group, r.kind): r for r in resources}
            for key, watch in list(self._watches.items()):
                if watch.gone.is_set():
                    del self._watches[key]
                    self._synced.discard(key)
            for resource in resources:
                key = (resource.group, resource.plural)
                if key in IGNORED or key in self._watches:
                    continue
                watch = ResourceWatch(
                    self.access, resource, self._on_sync, self._on_event, self.stop
                )
                self._watches[key] = watch
                watch.start()

    # events (called on watch threads) ------------------------------------------------------

    def _on_sync(self, resource: Resource, items: list[dict[str, Any]]) -> None:
        seen = set()
        for obj in items:
            node = Node.of(resource, obj)
            seen.add(node.uid)
            self.graph.upsert(node)
        for uid in self.graph.uids_of(resource):
            if uid not in seen:
                self._forget(uid)
        with self._lock:
            self._synced.add((resource.group, resource.plural))
        self._enqueue(seen)

    def _on_event(self, resource: Resource, kind: str, obj: dict[str, Any]) -> None:
        node = Node.of(resource, obj)
        if (resource.group, resource.plural) == CRDS:
            self._rediscover_until = time.monotonic() + REDISCOVER_WINDOW
        if kind == "DELETED":
            self._forget(node.uid)
            return
        old = self.graph.upsert(node)
        self._enqueue([node.uid])
        self._enqueue(str(r.get("uid", "")) for r in node.owners)
        if old is not None:
            self._enqueue(str(r.get("uid", "")) for r in old.owners)

    def _forget(self, uid: str) -> None:
        old = self.graph.remove(uid)
        self._enqueue(d.uid for d in self.graph.dependents_of(uid))
        if old is not None:
            self._enqueue(str(r.get("uid", "")) for r in old.owners)

    def _all_synced(self) -> bool:
        with self._lock:
            return all(key in self._synced for key in self._watches)

    # decisions -----------------------------------------------------------------------------

    def _process(self, client: ApiClient, uid: str) -> None:
        node = self.graph.get(uid)
        if node is None:
            return
        if node.deleting:
            if (FOREGROUND in node.finalizers or ORPHAN in node.finalizers) and not (
                self._all_synced()
            ):
                self.queue.add_after(uid, 0.2)
                return
            if FOREGROUND in node.finalizers:
                self._delete_dependents(client, node)
            elif ORPHAN in node.finalizers:
                self._orphan_dependents(client, node)
            return
        if node.owners:
            self._check_owners(client, node)

    def _check_owners(self, client: ApiClient, node: Node) -> None:
        states = {str(r.get("uid", "")): self._owner_state(client, node, r) for r in node.owners}
        decision = decide_for_dependent(
            node.owners, states, has_dependents=bool(self.graph.dependents_of(node.uid))
        )
        if decision.keep_references is not None:
            self._replace_list(
                client, node, "ownerReferences", list(node.owners), decision.keep_references
            )
        if decision.delete_with is None:
            return
        policy = decision.delete_with
        logger.info(
            "deleting an object whose owners are gone",
            extra={"object": node.path, "propagation": policy},
        )
        try:
            client.request(
                "DELETE",
                node.path,
                body={
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "propagationPolicy": policy,
                    "preconditions": {"uid": node.uid},
                },
            )
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _owner_state(self, client: ApiClient, node: Node, ref: dict[str, Any]) -> str:
        """`solid`, `gone`, or `waiting` (being deleted in the foreground)."""
        owner_uid = str(ref.get("uid", ""))
        cached = self.graph.get(owner_uid)
        if cached is not None:
            return "waiting" if cached.deleting and FOREGROUND in cached.finalizers else "solid"
        with self._lock:
            resource = self._kinds.get(
                (group_of(str(ref.get("apiVersion", ""))), str(ref.get("kind", "")))
            )
        if resource is None:
            return "solid"  # an owner of a kind the server does not serve: leave it alone
        if resource.namespaced and not node.namespace:
            return "solid"  # a cluster-scoped dependent cannot name a namespaced owner
        try:
            owner = client.get(resource.path(node.namespace, str(ref.get("name", ""))))
        except ApiError as exc:
            if exc.code == 404:
                return "gone"
            raise
        meta = owner.get("metadata") or {}
        if meta.get("uid") != owner_uid:
            return "gone"
        if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or []):
            return "waiting"
        return "solid"

    def _delete_dependents(self, client: ApiClient, owner: Node) -> None:
        dependents = self.graph.dependents_of(owner.uid)
        self._enqueue(d.uid for d in dependents if not d.deleting)
        blocking = [
            d
            for d in dependents
            if (d.reference_to(owner.uid) or {}).get("blockOwnerDeletion") is True
        ]
        if blocking:
            return
        # Non-blocking dependents are deleted too, but need not be gone before the owner.
        self._remove_finalizer(client, owner, FOREGROUND)

    def _orphan_dependents(self, client: ApiClient, owner: Node) -> None:
        for dependent in self.graph.dependents_of(owner.uid):
            keep = [r for r in dependent.owners if r.get("uid") != owner.uid]
            self._replace_list(client, dependent, "ownerReferences", list(dependent.owners), keep)
        self._remove_finalizer(client, owner, ORPHAN)

    def _remove_finalizer(self, client: ApiClient, node: Node, finalizer: str) -> None:
        keep = [f for f in node.finalizers if f != finalizer]
        logger.info(
            "removing a deletion finalizer", extra={"object": node.path, "finalizer": finalizer}
        )
        self._replace_list(client, node, "finalizers", list(node.finalizers), keep)

    def _replace_list(
        self,
        client: ApiClient,
        node: Node,
        field: str,
        current: list[Any],
        wanted: list[Any],
    ) -> None:
        """JSON Patch guarded by a `test` of the list the decision was made on."""
        path = f"/metadata/{field}"
        change: dict[str, Any] = (
            {"op": "replace", "path": path, "value": wanted}
            if wanted
            else {"op": "remove", "path": path}
        )
        try:
            client.json_patch(node.path, [{"op": "test", "path": path, "value": current}, change])
        except ApiError as exc:
            if exc.code == 404:
                return
            raise
