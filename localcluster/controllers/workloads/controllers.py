"""The two controller threads: list and watch, keep caches, carry out the decisions."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubeio.workqueue import WorkQueue
from localcluster.controllers.client import ApiClient, ApiError, ClusterAccess, Resource
from localcluster.controllers.informer import ResourceWatch
from localcluster.controllers.workloads.objects import (
    DEPLOYMENTS,
    DESIRED_REPLICAS,
    EVENTS,
    MAX_REPLICAS,
    PODS,
    REPLICASETS,
    RESYNC_SECONDS,
    REVISION,
    TOMBSTONES,
    as_int,
    controller_of,
    meta_of,
    object_key,
    replicas,
    revision,
    spec_of,
    status_of,
)
from localcluster.controllers.workloads.replicasets import (
    event,
    is_active,
    new_pod,
    pods_to_delete,
    replica_set_status,
    status_patch,
)
from localcluster.controllers.workloads.rollout import (
    fenceposts,
    history_to_delete,
    is_rolling,
    new_replica_set,
    new_replica_set_target,
    old_replica_set_targets,
    replica_set_annotations,
)
from localcluster.controllers.workloads.status import (
    deployment_complete,
    deployment_counts,
    deployment_status,
)
from localcluster.controllers.workloads.templates import (
    find_new_replica_set,
    template_hash,
    templates_equal,
)

logger = logging.getLogger(__name__)


def _uid(obj: Mapping[str, Any]) -> str:
    return str(meta_of(obj).get("uid") or object_key(obj))


def _resource_version(obj: Mapping[str, Any]) -> int | None:
    try:
        return int(str(meta_of(obj).get("resourceVersion")))
    except ValueError:
        return None


class Cache:
    """The objects of one resource, fed by its watch and by the answers to our own writes.

    Writes answer before their watch events arrive, so both feed the cache: an older version
    never replaces a newer one, and an object once deleted (or deleted by us) never comes back.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {}
        self._keys: dict[str, str] = {}
        self._owned: dict[str, set[str]] = {}
        self._gone: OrderedDict[str, None] = OrderedDict()
        self.synced = threading.Event()

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        with self._lock:
            self._objects.clear()
            self._keys.clear()
            self._owned.clear()
            for obj in items:
                if _uid(obj) not in self._gone:
                    self._put(obj)
        self.synced.set()

    def observe(self, obj: dict[str, Any]) -> None:
        """Remember `obj` unless what is known is newer or it was deleted."""
        uid = _uid(obj)
        with self._lock:
            if uid in self._gone:
                return
            old = self._objects.get(uid)
            if old is not None:
                old_version, new_version = _resource_version(old), _resource_version(obj)
                if (
                    old_version is not None
                    and new_version is not None
                    and new_version < old_version
                ):
                    return
                self._drop(uid)
            self._put(obj)

    def forget(self, obj: Mapping[str, Any]) -> None:
        """`obj` was deleted: drop it and ignore whatever about it arrives later."""
        uid = _uid(obj)
        with self._lock:
            self._drop(uid)
            self._gone[uid] = None
            while len(self._gone) > TOMBSTONES:
                self._gone.popitem(last=False)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            uid = self._keys.get(key)
            return self._objects.get(uid) if uid is not None else None

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._keys)

    def controlled_by(self, owner_uid: str) -> list[dict[str, Any]]:
        with self._lock:
            return [self._objects[u] for u in self._owned.get(owner_uid, ()) if u in self._objects]

    def _put(self, obj: dict[str, Any]) -> None:
        uid = _uid(obj)
        self._objects[uid] = obj
        self._keys[object_key(obj)] = uid
        owner = controller_of(obj)
        if owner is not None:
            self._owned.setdefault(str(owner.get("uid", "")), set()).add(uid)

    def _drop(self, uid: str) -> None:
        old = self._objects.pop(uid, None)
        if old is None:
            return
        key = object_key(old)
        if self._keys.get(key) == uid:
            del self._keys[key]
        owner = controller_of(old)
        if owner is not None:
            self._owned.get(str(owner.get("uid", "")), set()).discard(uid)


@dataclass(frozen=True)
class _Watched:
    resource: Resource
    cache: Cache
    #: For a dependent resource: the owner kind whose key a change of it enqueues.
    owner_kind: str = ""


class _WorkloadController(threading.Thread):
    """Watches a primary resource and its dependents; syncs one primary object at a time."""

    component = ""
    kind = ""
    api_version = "apps/v1"

    def __init__(
        self, access: ClusterAccess, stop: threading.Event, watched: Sequence[_Watched]
    ) -> None:
        super().__init__(name=self.component, daemon=True)
        self.access = access
        self.stop = stop
        self.queue = WorkQueue()
        self._watched = {(w.resource.group, w.resource.plural): w for w in watched}
        self._primary = watched[0].cache

    def run(self) -> None:
        for watched in self._watched.values():
            ResourceWatch(
                self.access, watched.resource, self._on_sync, self._on_event, self.stop
            ).start()
        with ApiClient(self.access) as client:
            next_resync = 0.0
            while not self.stop.is_set():
                if not all(w.cache.synced.is_set() for w in self._watched.values()):
                    self.stop.wait(0.1)
                    continue
                if time.monotonic() >= next_resync:
                    self._enqueue(self._primary.keys())
                    next_resync = time.monotonic() + RESYNC_SECONDS
                key = self.queue.get(timeout=0.2)
                if key is None:
                    continue
                try:
                    self.sync(client, key)
                    self.queue.forget(key)
                except ApiError as exc:
                    logger.info(
                        "workload sync retried",
                        extra={"controller": self.component, "key": key, "error": str(exc)},
                    )
                    self.queue.add_rate_limited(key)
                except Exception:
                    logger.exception(
                        "workload sync failed", extra={"controller": self.component, "key": key}
                    )
                    self.queue.add_after(key, RESYNC_SECONDS)
                finally:
                    self.queue.done(key)

    def _enqueue(self, keys: Iterable[str]) -> None:
        for key in keys:
            if key:
                self.queue.add(key)

    def sync(self, client: ApiClient, key: str) -> None:
        raise NotImplementedError

    # events (called on watch threads) ------------------------------------------------------

    def _on_sync(self, resource: Resource, items: list[dict[str, Any]]) -> None:
        watched = self._watched[(resource.group, resource.plural)]
        watched.cache.replace(items)
        self._enqueue(self._keys_for(watched, items))

    def _on_event(self, resource: Resource, kind: str, obj: dict[str, Any]) -> None:
        watched = self._watched[(resource.group, resource.plural)]
        if kind == "DELETED":
            watched.cache.forget(obj)
        else:
            watched.cache.observe(obj)
        self._enqueue(self._keys_for(watched, [obj]))

    @staticmethod
    def _keys_for(watched: _Watched, objects: Iterable[Mapping[str, Any]]) -> list[str]:
        if not watched.owner_kind:
            return [object_key(obj) for obj in objects]
        keys = []
        for obj in objects:
            owner = controller_of(obj)
            if owner is not None and owner.get("kind") == watched.owner_kind:
                keys.append(f"{meta_of(obj).get('namespace') or ''}/{owner.get('name')}")
        return keys

    # writes --------------------------------------------------------------------------------

    def record(self, client: ApiClient, obj: Mapping[str, Any], reason: str, message: str) -> None:
        """Best effort, one attempt: an event is not worth holding up the work."""
        body = event(
            obj, self.kind, reason, message, self.component, datetime.now(UTC), self.api_version
        )
        try:
            client.request("POST", EVENTS.path(str(meta_of(obj).get("namespace"))), body=body)
        except ApiError as exc:
            logger.debug("event not recorded", extra={"reason": reason, "error": str(exc)})

    @staticmethod
    def merge_patch(client: ApiClient, path: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        return client.request(
            "PATCH", path, body=patch, content_type="application/merge-patch+json"
        )


class ReplicaSetController(_WorkloadController):
    """Keeps `spec.replicas` active pods per ReplicaSet and reports them in its status."""

    component = "replicaset-controller"
    kind = "ReplicaSet"

    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        self.replicasets = Cache()
        self.pods = Cache()
        super().__init__(
            access,
            stop,
            [_Watched(REPLICASETS, self.replicasets), _Watched(PODS, self.pods, "ReplicaSet")],
        )

    def sync(self, client: ApiClient, key: str) -> None:
        rs = self.replicasets.get(key)
        if rs is None:
            return
        if not meta_of(rs).get("deletionTimestamp"):
            self._manage(client, rs)
        active = [p for p in self.pods.controlled_by(_uid(rs)) if is_active(p)]
        status, recheck = replica_set_status(rs, active, datetime.now(UTC))
        if status != dict(status_of(rs)):
            path = REPLICASETS.path(str(meta_of(rs).get("namespace")), str(meta_of(rs).get("name")))
            try:
                updated = self.merge_patch(
                    client, f"{path}/status", status_patch(status_of(rs), status)
                )
            except ApiError as exc:
                if exc.code == 404:
                    return
                raise
            self.replicasets.observe(updated)
        if recheck is not None:
            self.queue.add_after(key, recheck + 0.05)

    def _manage(self, client: ApiClient, rs: dict[str, Any]) -> None:
        namespace = str(meta_of(rs).get("namespace"))
        active = [p for p in self.pods.controlled_by(_uid(rs)) if is_active(p)]
        missing = replicas(rs) - len(active)
        for _ in range(missing):
            created = client.request("POST", PODS.path(namespace), body=new_pod(rs))
            self.pods.observe(created)
            name = meta_of(created).get("name")
            logger.info("pod created", extra={"replicaset": object_key(rs), "pod": name})
            self.record(client, rs, "SuccessfulCreate", f"Created pod: {name}")
        for pod in pods_to_delete(active, -missing):
            name = str(meta_of(pod).get("name"))
            try:
                client.request(
                    "DELETE",
                    PODS.path(namespace, name),
                    body={
                        "kind": "DeleteOptions",
                        "apiVersion": "v1",
                        "preconditions": {"uid": meta_of(pod).get("uid")},
                    },
                )
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise
            self.pods.forget(pod)
            logger.info("pod deleted", extra={"replicaset": object_key(rs), "pod": name})
            self.record(client, rs, "SuccessfulDelete", f"Deleted pod: {name}")


class DeploymentController(_WorkloadController):
    """Rolls each Deployment out through its ReplicaSets and reports progress in its status."""

    component = "deployment-controller"
    kind = "Deployment"

    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        self.deployments = Cache()
        self.replicasets = Cache()
        super().__init__(
            access,
            stop,
            [
                _Watched(DEPLOYMENTS, self.deployments),
                _Watched(REPLICASETS, self.replicasets, "Deployment"),
            ],
        )

    def sync(self, client: ApiClient, key: str) -> None:
        deployment = self.deployments.get(key)
        if deployment is None or meta_of(deployment).get("deletionTimestamp"):
            return
        selector = spec_of(deployment).get("selector") or {}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            logger.warning("deployment without a selector ignored", extra={"deployment": key})
            return
        owned = self.replicasets.controlled_by(_uid(deployment))
        new_rs = find_new_replica_set(deployment, owned)
        old = [rs for rs in owned if rs is not new_rs]
        created = False
        if spec_of(deployment).get("paused"):
            if new_rs is not None and not any(replicas(rs) for rs in old):
                new_rs = self._scale(client, deployment, new_rs, replicas(deployment))
        else:
            if new_rs is None and (
                is_rolling(deployment)
                or not any(as_int(status_of(rs).get("replicas")) for rs in old)
            ):
                new_rs, created = self._create_new(client, deployment, old)
            elif new_rs is not None:
                new_rs = self._update_annotations(client, deployment, new_rs, old)
            new_rs, old = self._roll(client, deployment, new_rs, old)
        if new_rs is not None:
            deployment = self._set_revision(client, deployment, revision(new_rs))
        owned = [*old, *([new_rs] if new_rs is not None else [])]
        counts = deployment_counts(deployment, new_rs, owned)
        if spec_of(deployment).get("paused") or deployment_complete(deployment, counts):
            old = self._clean_up(client, deployment, old)
            owned = [*old, *([new_rs] if new_rs is not None else [])]
        status = deployment_status(
            deployment, new_rs, owned, datetime.now(UTC), created_new=created
        )
        self._write_status(client, deployment, status)

    # steps ---------------------------------------------------------------------------------

    def _create_new(
        self, client: ApiClient, deployment: dict[str, Any], old: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]:
        """The ReplicaSet for the current template: created, or found after a stale cache."""
        meta = meta_of(deployment)
        namespace = str(meta.get("namespace"))
        collisions = status_of(deployment).get("collisionCount")
        template = spec_of(deployment).get("template") or {}
        pod_hash = template_hash(template, as_int(collisions) if collisions is not None else None)
        next_revision = max((revision(rs) for rs in old), default=0) + 1
        count = new_replica_set_target(deployment, None, old)
        body = new_replica_set(deployment, pod_hash, next_revision, count)
        try:
            created = client.request("POST", REPLICASETS.path(namespace), body=body)
        except ApiError as exc:
            if exc.code != 409:
                raise
            existing = client.get(REPLICASETS.path(namespace, str(body["metadata"]["name"])))
            owner = controller_of(existing)
            if (
                owner is not None
                and owner.get("uid") == meta.get("uid")
                and templates_equal(spec_of(existing).get("template") or {}, template)
            ):
                self.replicasets.observe(existing)
                return existing, False
            # A different ReplicaSet holds the name: hash again with a higher collision count.
            patch = {"status": {"collisionCount": as_int(collisions) + 1}}
            path = DEPLOYMENTS.path(namespace, str(meta.get("name")))
            self.deployments.observe(self.merge_patch(client, f"{path}/status", patch))
            raise
        self.replicasets.observe(created)
        logger.info(
            "replica set created",
            extra={"deployment": object_key(deployment), "replicaset": object_key(created)},
        )
        self.record(
            client,
            deployment,
            "ScalingReplicaSet",
            f"Scaled up replica set {meta_of(created).get('name')} from 0 to {count}",
        )
        return created, True

    def _update_annotations(
        self,
        client: ApiClient,
        deployment: dict[str, Any],
        new_rs: dict[str, Any],
        old: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """Copy the Deployment's annotations to its current ReplicaSet and give it the next
        revision when it is an old one brought back (a rollback)."""
        current = {str(k): str(v) for k, v in (meta_of(new_rs).get("annotations") or {}).items()}
        next_revision = max((revision(rs) for rs in old), default=0) + 1
        wanted = replica_set_annotations(deployment, current, next_revision)
        # The replica counts are written with each scaling, not on their own.
        for key in (DESIRED_REPLICAS, MAX_REPLICAS):
            if key in current:
                wanted[key] = current[key]
            else:
                wanted.pop(key, None)
        if wanted == current:
            return new_rs
        path = REPLICASETS.path(
            str(meta_of(new_rs).get("namespace")), str(meta_of(new_rs).get("name"))
        )
        updated = self.merge_patch(client, path, {"metadata": {"annotations": wanted}})
        self.replicasets.observe(updated)
        return updated

    def _roll(
        self,
        client: ApiClient,
        deployment: dict[str, Any],
        new_rs: dict[str, Any] | None,
        old: list[dict[str, Any]],
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """One step of the rollout; returns the new and old ReplicaSets as they now are."""
        if not is_rolling(deployment):
            targets = old_replica_set_targets(deployment, new_rs, old)
            old = [self._scale_to(client, deployment, rs, targets) for rs in old]
            if new_rs is not None and not any(as_int(status_of(rs).get("replicas")) for rs in old):
                new_rs = self._scale(client, deployment, new_rs, replicas(deployment))
            return new_rs, old
        if new_rs is not None:
            target = new_replica_set_target(deployment, new_rs, old)
            if target != replicas(new_rs):
                # Like kube: scale one way per sync, and down only once the new pods count.
                return self._scale(client, deployment, new_rs, target), old
        targets = old_replica_set_targets(deployment, new_rs, old)
        return new_rs, [self._scale_to(client, deployment, rs, targets) for rs in old]

    def _scale_to(
        self,
        client: ApiClient,
        deployment: dict[str, Any],
        rs: dict[str, Any],
        targets: Mapping[str, int],
    ) -> dict[str, Any]:
        target = targets.get(str(meta_of(rs).get("name")))
        if target is None:
            return rs
        return self._scale(client, deployment, rs, target)

    def _scale(
        self, client: ApiClient, deployment: dict[str, Any], rs: dict[str, Any], count: int
    ) -> dict[str, Any]:
        before = replicas(rs)
        annotations = meta_of(rs).get("annotations") or {}
        surge, _ = fenceposts(deployment)
        wanted = {
            DESIRED_REPLICAS: str(replicas(deployment)),
            MAX_REPLICAS: str(replicas(deployment) + surge),
        }
        if before == count and all(annotations.get(k) == v for k, v in wanted.items()):
            return rs
        path = REPLICASETS.path(str(meta_of(rs).get("namespace")), str(meta_of(rs).get("name")))
        patch = {"metadata": {"annotations": wanted}, "spec": {"replicas": count}}
        updated = self.merge_patch(client, path, patch)
        self.replicasets.observe(updated)
        if before != count:
            direction = "up" if count > before else "down"
            name = meta_of(rs).get("name")
            logger.info(
                "replica set scaled",
                extra={"replicaset": object_key(rs), "from": before, "to": count},
            )
            self.record(
                client,
                deployment,
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {name} to {count} from {before}",
            )
        return updated

    def _set_revision(
        self, client: ApiClient, deployment: dict[str, Any], number: int
    ) -> dict[str, Any]:
        if not number or revision(deployment) == number:
            return deployment
        meta = meta_of(deployment)
        path = DEPLOYMENTS.path(str(meta.get("namespace")), str(meta.get("name")))
        updated = self.merge_patch(
            client, path, {"metadata": {"annotations": {REVISION: str(number)}}}
        )
        self.deployments.observe(updated)
        return updated

    def _clean_up(
        self, client: ApiClient, deployment: dict[str, Any], old: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        doomed = {_uid(rs) for rs in history_to_delete(deployment, old)}
        for rs in old:
            if _uid(rs) not in doomed:
                continue
            path = REPLICASETS.path(str(meta_of(rs).get("namespace")), str(meta_of(rs).get("name")))
            try:
                client.request(
                    "DELETE",
                    path,
                    body={
                        "kind": "DeleteOptions",
                        "apiVersion": "v1",
                        "preconditions": {"uid": _uid(rs)},
                    },
                )
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise
            self.replicasets.forget(rs)
            logger.info("old replica set deleted", extra={"replicaset": object_key(rs)})
        return [rs for rs in old if _uid(rs) not in doomed]

    def _write_status(
        self, client: ApiClient, deployment: dict[str, Any], status: dict[str, Any]
    ) -> None:
        if status == dict(status_of(deployment)):
            return
        meta = meta_of(deployment)
        path = DEPLOYMENTS.path(str(meta.get("namespace")), str(meta.get("name")))
        try:
            updated = self.merge_patch(
                client, f"{path}/status", status_patch(status_of(deployment), status)
            )
        except ApiError as exc:
            if exc.code == 404:
                return
            raise
        self.deployments.observe(updated)
