"""A small list+watch store of one resource, for the CronJob and Queue controllers.

It keeps the objects as wire dicts keyed by `namespace/name` (or `name` when cluster-scoped) and
calls `on_change(old, new)` for every add, update and delete (the other one None), so the
owner can map an event to the keys it must sync. A `410 Gone` relists; other failures back off.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubeio.client import Kube, Resource
from kubeio.errors import KubeError, NotFoundError

log = logging.getLogger(__name__)

WireObject = dict[str, Any]
OnChange = Callable[[WireObject | None, WireObject | None], None]


def key_of(obj: WireObject) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    name = str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name


class Informer:
    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        on_change: OnChange,
        stop: threading.Event,
        *,
        timeout_seconds: int = 300,
    ) -> None:
        self._kube = kube
        self._resource = resource
        self._on_change = on_change
        self._stop = stop
        self._timeout_seconds = timeout_seconds
        self._lock = threading.Lock()
        self._store: dict[str, WireObject] = {}
        self._synced = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def get(self, key: str) -> WireObject | None:
        with self._lock:
            return self._store.get(key)

    def items(self) -> list[WireObject]:
        with self._lock:
            return list(self._store.values())

    def put(self, obj: WireObject) -> None:
        """Store an object this process has just written (newer than the watch may be)."""
        obj.setdefault("kind", self._resource.kind)
        with self._lock:
            self._store[key_of(obj)] = obj

    def start(self) -> None:
        name = f"informer-{self._resource.plural}"
        self._thread = threading.Thread(target=self.run, name=name, daemon=True)
        self._thread.start()

    def run(self) -> None:
        backoff = 0.2
        version: str | None = None
        while not self._stop.is_set():
            try:
                if version is None:
                    version = self._list()
                version = self._watch(version)
                backoff = 0.2
            except NotFoundError:
                # The resource is not served (its CRD is missing): empty, look again later.
                self._replace([])
                self._synced.set()
                version = None
                self._stop.wait(30.0)
            except KubeError as exc:
                if exc.status == 410:
                    version = None
                    continue
                log.warning(
                    "watch failed, retrying",
                    extra={"kind": self._resource.kind, "error": str(exc)},
                )
                self._stop.wait(backoff)
                backoff = min(30.0, backoff * 2)
            except Exception:
                log.exception("informer error", extra={"kind": self._resource.kind})
                self._stop.wait(backoff)
                backoff = min(30.0, backoff * 2)

    def _replace(self, items: list[WireObject]) -> None:
        fresh = {key_of(i): i for i in items}
        with self._lock:
            old = self._store
            self._store = fresh
        for key, obj in fresh.items():
            self._on_change(old.get(key), obj)
        for key, obj in old.items():
            if key not in fresh:
                self._on_change(obj, None)

    def _list(self) -> str:
        items, version = self._kube.list(self._resource)
        for item in items:
            item.setdefault("kind", self._resource.kind)
        self._replace(items)
        self._synced.set()
        return version

    def _watch(self, version: str) -> str:
        for event in self._kube.watch(
            self._resource, resource_version=version, timeout_seconds=self._timeout_seconds
        ):
            if self._stop.is_set():
                break
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                raise KubeError(f"watch error: {obj.get('message')}", int(obj.get("code") or 0))
            new_version = (obj.get("metadata") or {}).get("resourceVersion")
            if new_version:
                version = str(new_version)
            if kind == "BOOKMARK":
                continue
            obj.setdefault("kind", self._resource.kind)
            key = key_of(obj)
            with self._lock:
                old = self._store.get(key)
                if kind == "DELETED":
                    self._store.pop(key, None)
                else:
                    self._store[key] = obj
            self._on_change(old, None if kind == "DELETED" else obj)
        return version
