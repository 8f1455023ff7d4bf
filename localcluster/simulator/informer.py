"""List-then-watch caches of one resource type, kept current by a background thread."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any

from localcluster.simulator.client import ApiError, KubeClient, Resource, WatchExpiredError

log = logging.getLogger(__name__)


def object_key(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or ""
    return f"{namespace}/{metadata.get('name', '')}" if namespace else str(metadata.get("name"))


def resource_version(obj: Mapping[str, Any]) -> int:
    """The object's resourceVersion as a number (this API server's are; others count as 0)."""
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Informer:
    """Mirrors every object of `resource` in memory and calls `on_change` after each change.

    Lists, then watches from the list's resourceVersion; a 410 Gone or a broken stream leads to a
    fresh list, exactly what client-go's reflector does.
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
        self.synced = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{resource.plural}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._objects.values())

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get(key)

    def _run(self) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            try:
                version = self._list()
                backoff = 0.2
                while not self._stop.is_set():
                    version = self._watch(version)
            except WatchExpiredError:
                log.info("watch expired, listing again", extra={"resource": self._resource.plural})
                continue
            except (ApiError, ValueError) as err:
                if self._stop.is_set():
                    return
                log.warning(
                    "list or watch failed, retrying",
                    extra={"resource": self._resource.plural, "error": str(err)},
                )
                self._stop.wait(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, 5.0)

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
        if current is None or version >= resource_version(current):
            self._objects[key] = obj

    def _list(self) -> str:
        listing = self._client.list(self._resource)
        objects = {object_key(item): item for item in listing.get("items") or []}
        with self._lock:
            self._objects = objects
            self._tombstones = {}
        self.synced.set()
        self._on_change()
        return str(listing.get("metadata", {}).get("resourceVersion", ""))

    def _watch(self, since: str) -> str:
        """Apply watch events from `since`; returns the last resourceVersion seen."""
        timeout = random.randint(30, 60)
        for event in self._client.watch(self._resource, since, timeout_seconds=timeout):
            if self._stop.is_set():
                break
            kind = event.get("type")
            obj = event.get("object") or {}
            since = str(obj.get("metadata", {}).get("resourceVersion", since))
            if kind == "BOOKMARK":
                continue
            key = object_key(obj)
            with self._lock:
                if kind == "DELETED":
                    self._objects.pop(key, None)
                    self._tombstones[key] = resource_version(obj)
                else:
                    self._keep_newer(key, obj)
            self._on_change()
        return since
