"""List-then-watch loops: one kubeio reflector per resource keeps a consumer informed of every
change."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubeio.client import Kube, new_api_client
from kubeio.client import Resource as KubeResource
from kubeio.informer import Reflector, WatchSpec
from localcluster.controllers.client import ClusterAccess, Resource

#: The server ends each watch after this long; a new one starts from the last resourceVersion.
WATCH_SECONDS = 10

# (resource, event type, object). Types: ADDED, MODIFIED, DELETED, and SYNC for every object of
# a fresh list (after which the consumer drops objects of that resource it did not see).
EventHandler = Callable[[Resource, str, dict[str, Any]], None]
SyncHandler = Callable[[Resource, list[dict[str, Any]]], None]


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}")


class ResourceWatch:
    """Lists a resource, then watches it from the list's resourceVersion, forever (kubeio's
    reflector: bookmarks followed, a 410 Gone re-lists, a broken stream resumes).

    Events are told apart the way client-go's informers do it, from what was seen before: an
    object not seen yet is ADDED, a known one MODIFIED. A resource that disappears (404, e.g.
    its CRD was deleted) ends the watch after reporting an empty list; `gone` is then set.
    """

    def __init__(
        self,
        access: ClusterAccess,
        resource: Resource,
        on_sync: SyncHandler,
        on_event: EventHandler,
        stop: threading.Event,
    ) -> None:
        self.access = access
        self.resource = resource
        self.on_sync = on_sync
        self.on_event = on_event
        self.stop = stop
        self._known: set[str] = set()
        self._lock = threading.Lock()
        watched = KubeResource(
            resource.group,
            resource.version,
            resource.plural,
            resource.kind,
            namespaced=resource.namespaced,
        )
        kube = Kube(new_api_client(access.configuration, pool_size=2), qps=0)
        self._reflector = Reflector(
            kube,
            WatchSpec(watched),
            self,
            lambda _keys: None,
            stop,
            timeout_seconds=WATCH_SECONDS,
            end_when_missing=True,
        )
        self.gone = self._reflector.missing

    def start(self) -> None:
        self._reflector.start()

    def join(self, timeout: float | None = None) -> None:
        self._reflector.join(timeout if timeout is not None else 30.0)

    def is_alive(self) -> bool:
        return self._reflector.alive()

    # --- the reflector's store ------------------------------------------------------------------

    def replace_all(self, kind: str, items: Iterable[dict[str, Any]]) -> set[str]:
        listed = list(items)
        with self._lock:
            self._known = {_key(obj) for obj in listed}
        self.on_sync(self.resource, listed)
        return set()

    def upsert(self, kind: str, obj: dict[str, Any]) -> str | None:
        key = _key(obj)
        with self._lock:
            event = "MODIFIED" if key in self._known else "ADDED"
            self._known.add(key)
        self.on_event(self.resource, event, obj)
        return None

    def remove(self, kind: str, obj: dict[str, Any]) -> str | None:
        with self._lock:
            self._known.discard(_key(obj))
        self.on_event(self.resource, "DELETED", obj)
        return None
