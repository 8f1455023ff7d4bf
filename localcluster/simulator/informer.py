"""List-then-watch caches of one resource type, kept current by a background thread."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from localcluster.simulator.client import ApiError, KubeClient, Resource, WatchExpiredError

log = logging.getLogger(__name__)


def object_key(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or ""
    return f"{namespace}/{metadata.get('name', '')}" if namespace else str(metadata.get("name"))


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
                resource_version = self._list()
                backoff = 0.2
                while not self._stop.is_set():
                    resource_version = self._watch(resource_version)
            except WatchExpiredError:
                log.info("watch expired, listing again", extra={"resource": self._resource.plural})
                continue
            except (ApiError, httpx.HTTPError, ValueError) as err:
                if self._stop.is_set():
                    return
                log.warning(
                    "list or watch failed, retrying",
                    extra={"resource": self._resource.plural, "error": str(err)},
                )
                self._stop.wait(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, 5.0)

    def _list(self) -> str:
        listing = self._client.list(self._resource)
        objects = {object_key(item): item for item in listing.get("items") or []}
        with self._lock:
            self._objects = objects
        self.synced.set()
        self._on_change()
        return str(listing.get("metadata", {}).get("resourceVersion", ""))

    def _watch(self, resource_version: str) -> str:
        timeout = random.randint(30, 60)
        for event in self._client.watch(self._resource, resource_version, timeout_seconds=timeout):
            if self._stop.is_set():
                break
            kind = event.get("type")
            obj = event.get("object") or {}
            resource_version = str(obj.get("metadata", {}).get("resourceVersion", resource_version))
            if kind == "BOOKMARK":
                continue
            key = object_key(obj)
            with self._lock:
                if kind == "DELETED":
                    self._objects.pop(key, None)
                else:
                    self._objects[key] = obj
            self._on_change()
        return resource_version
