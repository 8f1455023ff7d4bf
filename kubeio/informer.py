"""List+watch loops (reflectors) feeding stores and, through them, work queues.

Each resource gets one thread: list (paged), store, then watch from the list's resourceVersion,
following bookmarks; a `410 Gone` (as an ERROR event or a status) re-lists; a dropped stream
resumes from the last resourceVersion; other errors back off and retry. A resource the server
does not serve (404 on list) counts as synced and empty, and is re-checked now and then.
Objects are stored without their managedFields' field sets (`kubeio.managedfields`).

The controllers of one process share their watches (`SharedWatches`, as client-go's shared
informers): one stream per resource and selector, each change decoded once and handed to every
store that subscribed, in the order they did. Stores share the objects, so none may change one
it holds.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kubeio.client import Resource
from kubeio.errors import KubeError, NotFoundError
from kubeio.kubelike import KubeLike
from kubeio.managedfields import drop_field_sets
from shared.wire import resource_version_of

# Jitter has its own generator: background threads must not move the global `random`
# state that seeded code (and Hypothesis) relies on.
_JITTER = random.Random()

log = logging.getLogger(__name__)


class Store(Protocol):
    """Where a reflector puts what it lists and watches. Each call returns the work-queue
    keys the change touches (for the controller: the jobs the objects belong to)."""

    def replace_all(self, kind: str, items: Iterable[dict[str, Any]]) -> set[str]: ...

    def upsert(self, kind: str, obj: dict[str, Any]) -> str | None: ...

    def remove(self, kind: str, obj: dict[str, Any]) -> str | None: ...


@dataclass(frozen=True)
class WatchSpec:
    resource: Resource
    label_selector: str | None = None


class _GoneError(Exception):
    pass


Enqueue = Callable[[Iterable[str]], None]


@dataclass(frozen=True)
class _Subscriber:
    store: Store
    enqueue: Enqueue
    stop: threading.Event


class _AllStopped:
    """The stop of a shared watch: set once every subscriber's own stop is."""

    def __init__(self, subscribers: list[_Subscriber]) -> None:
        self._subscribers = subscribers

    def is_set(self) -> bool:
        return all(s.stop.is_set() for s in self._subscribers)

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for subscriber in self._subscribers:
            if not subscriber.stop.wait(max(0.0, deadline - time.monotonic())):
                return False
        return True


class Reflector:
    def __init__(
        self,
        kube: KubeLike,
        spec: WatchSpec,
        cache: Store,
        enqueue: Enqueue,
        stop: threading.Event,
        *,
        timeout_seconds: int = 300,
        max_backoff: float = 30.0,
        end_when_missing: bool = False,
        missing_recheck: float = 60.0,
    ) -> None:
        self._kube = kube
        self._spec = spec
        self._subscribers = [_Subscriber(cache, enqueue, stop)]
        self._stop = _AllStopped(self._subscribers)
        self._timeout_seconds = timeout_seconds
        self._max_backoff = max_backoff
        # A resource the server stops serving (its CRD deleted) ends the loop: `missing` is set
        # after the store was emptied.
        self._end_when_missing = end_when_missing
        # How soon a resource the server does not serve (its CRD not installed yet) is looked for
        # again: what it costs is one 404 per period.
        self._missing_recheck = missing_recheck
        self.missing = threading.Event()
        # Set while the server serves the resource (the last list succeeded), cleared by a 404.
        self._served = threading.Event()
        self._synced = threading.Event()
        self._heartbeat = time.monotonic()
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self._resource_version: str | None = None
        self.relists = 0

    def subscribe(self, store: Store, enqueue: Enqueue, stop: threading.Event) -> None:
        """One more store fed by this watch, until its own `stop` is set (the watch ends when
        every subscriber's is). Only before the watch starts: a later one would miss the list."""
        if self._thread is not None:
            raise RuntimeError(f"the {self.kind} watch has started")
        self._subscribers.append(_Subscriber(store, enqueue, stop))

    @property
    def spec(self) -> WatchSpec:
        return self._spec

    @property
    def started(self) -> bool:
        return self._thread is not None

    def _live(self) -> list[_Subscriber]:
        return [s for s in self._subscribers if not s.stop.is_set()]

    @property
    def kind(self) -> str:
        """What the store files the objects under (`Resource.cache_kind`)."""
        return self._spec.resource.cache_kind

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    @property
    def served(self) -> bool:
        """Whether the server served the resource at the last list."""
        return self._served.is_set()

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def last_heartbeat(self) -> float:
        return self._heartbeat

    def close(self) -> None:
        """Cut the open watch stream so the thread notices the stop at once (once every
        subscriber has stopped: the others still read it)."""
        if not self._stop.is_set():
            return
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.shutdown()

    def _opened(self, response: Any) -> None:
        self._response = response
        if self._stop.is_set():
            self.close()

    def start(self) -> None:
        """Start the watch's thread; a shared watch starts once, whoever asks first."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self.run, name=f"watch-{self.kind}", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        backoff = 0.0
        while not self._stop.is_set():
            self._heartbeat = time.monotonic()
            try:
                if self._resource_version is None:
                    self._resource_version = self._list()
                self._watch(self._resource_version)
                backoff = 0.0
            except _GoneError:
                log.info("watch expired, relisting", extra={"kind": self.kind})
                self._resource_version = None
            except NotFoundError:
                self._served.clear()
                if self._end_when_missing:
                    for subscriber in self._live():
                        subscriber.enqueue(subscriber.store.replace_all(self.kind, []))
                    self._synced.set()
                    self.missing.set()
                    return
                # The server does not serve this resource: nothing to cache, look again later.
                self._synced.set()
                self._resource_version = None
                self._stop.wait(self._missing_recheck)
            except KubeError as exc:
                if self._stop.is_set():
                    break
                if exc.status == 410:
                    self._resource_version = None
                    continue
                backoff = min(self._max_backoff, max(0.2, backoff * 2))
                log.warning(
                    "watch failed, retrying",
                    extra={"kind": self.kind, "error": str(exc), "delay": backoff},
                )
                self._stop.wait(backoff)
            except Exception:
                if self._stop.is_set():
                    break
                backoff = min(self._max_backoff, max(0.2, backoff * 2))
                log.exception("watch loop error", extra={"kind": self.kind})
                self._stop.wait(backoff)

    def _list(self) -> str:
        items, resource_version = self._kube.list(
            self._spec.resource, label_selector=self._spec.label_selector
        )
        kind = self.kind
        for item in items:
            item.setdefault("kind", self._spec.resource.kind)
            drop_field_sets(item)
        touched = [(s.enqueue, s.store.replace_all(kind, items)) for s in self._live()]
        self.relists += 1
        self._served.set()
        self._synced.set()
        for enqueue, keys in touched:
            enqueue(keys)
        return resource_version

    def _watch(self, resource_version: str) -> None:
        """Follow one watch stream; every event advances `_resource_version`, so a stream that
        breaks mid-way resumes after the last event it delivered."""
        kind = self.kind
        for event in self._kube.watch(
            self._spec.resource,
            resource_version=resource_version,
            label_selector=self._spec.label_selector,
            # As client-go's reflector: between the timeout and twice it, so that the watches
            # a process opened together do not all come back at the same moment.
            timeout_seconds=_JITTER.randint(self._timeout_seconds, 2 * self._timeout_seconds),
            on_open=self._opened,
        ):
            self._heartbeat = time.monotonic()
            if self._stop.is_set():
                break
            kind_of_event = event.get("type")
            obj = event.get("object") or {}
            if kind_of_event == "ERROR":
                if obj.get("code") == 410:
                    raise _GoneError
                raise KubeError(
                    f"watch error: {obj.get('message', obj)}", int(obj.get("code") or 0)
                )
            new_version = resource_version_of(obj)
            if kind_of_event == "BOOKMARK":
                if new_version:
                    self._resource_version = str(new_version)
                continue
            obj.setdefault("kind", self._spec.resource.kind)
            drop_field_sets(obj)
            if kind_of_event not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            for subscriber in self._live():
                store = subscriber.store
                if kind_of_event == "DELETED":
                    key = store.remove(kind, obj)
                else:
                    key = store.upsert(kind, obj)
                if key:
                    subscriber.enqueue((key,))
            if new_version:
                self._resource_version = str(new_version)


class SharedWatches:
    """The watches of one process, shared by its controllers: `reflector` hands out the one
    reflector of a resource, selector and settings, subscribing the store to it, as long as it
    has not started (a store that comes later gets a watch of its own)."""

    def __init__(self, kube: KubeLike) -> None:
        self._kube = kube
        self._lock = threading.Lock()
        self._reflectors: dict[tuple[WatchSpec, int, bool, float], Reflector] = {}

    def reflector(
        self,
        spec: WatchSpec,
        store: Store,
        enqueue: Enqueue,
        stop: threading.Event,
        *,
        timeout_seconds: int = 300,
        end_when_missing: bool = False,
        missing_recheck: float = 60.0,
    ) -> Reflector:
        key = (spec, timeout_seconds, end_when_missing, missing_recheck)
        with self._lock:
            shared = self._reflectors.get(key)
            if shared is not None and not shared.started:
                shared.subscribe(store, enqueue, stop)
                return shared
            reflector = Reflector(
                self._kube,
                spec,
                store,
                enqueue,
                stop,
                timeout_seconds=timeout_seconds,
                end_when_missing=end_when_missing,
                missing_recheck=missing_recheck,
            )
            self._reflectors[key] = reflector
            return reflector
