"""List-then-watch caches of one resource type, kept current by a background thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubeio.client import Resource as KubeResource
from kubeio.informer import Reflector, WatchSpec
from localcluster.simulator.client import KubeClient, Resource
from shared.wire import metadata

log = logging.getLogger(__name__)

# How often a resource not served yet (a CRD the chart installs later) is looked for.
MISSING_RECHECK_SECONDS = 1.0


def object_key(obj: Mapping[str, Any]) -> str:
    meta = metadata(obj)
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name"))


def resource_version(obj: Mapping[str, Any]) -> int:
    """The object's resourceVersion as a number (this API server's are; others count as 0)."""
    try:
        return int(metadata(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Informer:
    """Mirrors every object of `resource` in memory and calls `on_change` after each change.

    kubeio's reflector lists, then watches from the list's resourceVersion (following
    bookmarks; a 410 Gone re-lists, a broken stream resumes), and feeds this store.
    """

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        stop: threading.Event,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._client = client
        self._resource = resource
        self._stop = stop
        self._on_change = on_change
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {}
        # resourceVersion of each deletion seen since the last list: a late answer to one of our
        # writes must not bring a deleted object back.
        self._tombstones: dict[str, int] = {}
        # The newest resourceVersion the last list (after a 410 Gone, say) returned: an object
        # missing from that list in an older version was deleted before it, unseen.
        self._listed_up_to = 0
        self.synced = threading.Event()
        self._reflector: Reflector | None = None

    def start(self) -> None:
        kind = self._resource.kind or self._resource.plural
        watched = KubeResource(
            self._resource.group,
            self._resource.version,
            self._resource.plural,
            kind,
            namespaced=self._resource.namespaced,
        )
        self._reflector = Reflector(
            self._client.kube,
            WatchSpec(watched),
            self,
            lambda _keys: self._on_change(),
            self._stop,
            # On a bare cluster the chart brings the PodGroup and Queue CRDs later: the first
            # gang must not wait a minute for the agent to notice them.
            missing_recheck=MISSING_RECHECK_SECONDS,
        )
        self._reflector.start()

    def join(self, timeout: float) -> None:
        if self._reflector is not None:
            self._reflector.close()
            self._reflector.join(timeout)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._objects.values())

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get(key)

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Take an object the server returned to one of our own writes."""
        with self._lock:
            self._keep_newer(object_key(obj), dict(obj))

    def _keep_newer(self, key: str, obj: dict[str, Any]) -> None:
        """Store `obj` unless the cache holds a newer version (the answer to one of our writes
        can arrive before the watch events that precede it)."""
        version = resource_version(obj)
        if version <= self._tombstones.get(key, -1):
            return
        current = self._objects.get(key)
        if current is None and version <= self._listed_up_to:
            return
        if current is None or version >= resource_version(current):
            self._objects[key] = obj

    # --- the reflector's store ------------------------------------------------------------------

    def replace_all(self, kind: str, items: Iterable[dict[str, Any]]) -> set[str]:
        objects = {object_key(item): item for item in items}
        with self._lock:
            self._objects = objects
            self._tombstones = {}
            self._listed_up_to = max((resource_version(o) for o in objects.values()), default=0)
        self.synced.set()
        return set(objects)

    def upsert(self, kind: str, obj: dict[str, Any]) -> str | None:
        key = object_key(obj)
        with self._lock:
            self._keep_newer(key, obj)
        return key

    def remove(self, kind: str, obj: dict[str, Any]) -> str | None:
        key = object_key(obj)
        with self._lock:
            self._objects.pop(key, None)
            self._tombstones[key] = resource_version(obj)
        return key
