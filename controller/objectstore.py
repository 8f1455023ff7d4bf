"""A store of one resource fed by kubeio's list+watch reflector, for the CronJob and Queue
controllers.

It keeps the objects as wire dicts keyed by `namespace/name` (or `name` when cluster-scoped) and
calls `on_change(old, new)` for every add, update and delete (the other one None), so the owner
can map an event to the keys it must sync. With `keep`, only the objects it accepts are held and
reported (one that stops being accepted is reported as deleted): a controller that owns a few of
many Jobs does not hold a second copy of every Job. Listing, watching, bookmarks and the `410 Gone`
re-list are the reflector's (`kubeio.informer`), as for every other watch of the controller; an
informer built with the process's `SharedWatches` reads the stream its other controllers read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from kubeio.client import Resource
from kubeio.informer import Reflector, SharedWatches, WatchSpec
from kubeio.kubelike import KubeLike
from kubeio.managedfields import drop_field_sets
from shared.objectkeys import object_key
from shared.wire import WireObject

OnChange = Callable[[WireObject | None, WireObject | None], None]


key_of = object_key


class Informer:
    def __init__(
        self,
        kube: KubeLike,
        resource: Resource,
        on_change: OnChange,
        stop: threading.Event,
        *,
        timeout_seconds: int = 300,
        label_selector: str | None = None,
        keep: Callable[[WireObject], bool] | None = None,
        watches: SharedWatches | None = None,
    ) -> None:
        self._resource = resource
        self._on_change = on_change
        self._keep = keep
        self._lock = threading.Lock()
        self._store: dict[str, WireObject] = {}
        # The owner enqueues from `on_change`; the reflector's own key hand-off is not used.
        # With the process's `watches`, the stream is the one its other controllers read.
        self._reflector = (watches or SharedWatches(kube)).reflector(
            WatchSpec(resource, label_selector),
            self,
            _ignore_keys,
            stop,
            timeout_seconds=timeout_seconds,
        )

    @property
    def reflector(self) -> Reflector:
        """The watch that feeds it (maybe shared with the process's other controllers)."""
        return self._reflector

    @property
    def synced(self) -> bool:
        return self._reflector.synced

    def wait_synced(self, timeout: float) -> bool:
        return self._reflector.wait_synced(timeout)

    def alive(self) -> bool:
        return self._reflector.alive()

    def get(self, key: str) -> WireObject | None:
        with self._lock:
            return self._store.get(key)

    def items(self) -> list[WireObject]:
        with self._lock:
            return list(self._store.values())

    def put(self, obj: WireObject) -> None:
        """Store an object this process has just written (newer than the watch may be)."""
        obj.setdefault("kind", self._resource.kind)
        drop_field_sets(obj)
        if not self._kept(obj):
            return
        with self._lock:
            self._store[key_of(obj)] = obj

    def start(self) -> None:
        self._reflector.start()

    # -- kubeio.informer.Store ----------------------------------------------------------------

    def _kept(self, obj: WireObject) -> bool:
        return self._keep is None or self._keep(obj)

    def replace_all(self, kind: str, items: Iterable[WireObject]) -> set[str]:
        fresh = {key_of(i): i for i in items if self._kept(i)}
        for obj in fresh.values():
            obj.setdefault("kind", kind)
        with self._lock:
            old = self._store
            self._store = fresh
        for key, obj in fresh.items():
            self._on_change(old.get(key), obj)
        for key, obj in old.items():
            if key not in fresh:
                self._on_change(obj, None)
        return set()

    def upsert(self, kind: str, obj: WireObject) -> str | None:
        obj.setdefault("kind", kind)
        key = key_of(obj)
        kept = self._kept(obj)
        with self._lock:
            old = self._store.get(key) if kept else self._store.pop(key, None)
            if kept:
                self._store[key] = obj
        if kept or old is not None:
            self._on_change(old, obj if kept else None)
        return None

    def remove(self, kind: str, obj: WireObject) -> str | None:
        with self._lock:
            old = self._store.pop(key_of(obj), None)
        if old is not None or self._kept(obj):
            self._on_change(old if old is not None else obj, None)
        return None


def _ignore_keys(keys: Iterable[str]) -> None:
    del keys
