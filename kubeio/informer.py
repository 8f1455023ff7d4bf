"""List+watch loops (reflectors) feeding a store and, through it, a work queue.

Each resource gets one thread: list (paged), store, then watch from the list's resourceVersion,
following bookmarks; a `410 Gone` (as an ERROR event or a status) re-lists; a dropped stream
resumes from the last resourceVersion; other errors back off and retry. A resource the server
does not serve (404 on list) counts as synced and empty, and is re-checked now and then.
Objects are stored without their managedFields' field sets (`kubeio.managedfields`).
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


class Reflector:
    def __init__(
        self,
        kube: KubeLike,
        spec: WatchSpec,
        cache: Store,
        enqueue: Callable[[Iterable[str]], None],
        stop: threading.Event,
        *,
        timeout_seconds: int = 300,
        max_backoff: float = 30.0,
        end_when_missing: bool = False,
        missing_recheck: float = 60.0,
    ) -> None:
        self._kube = kube
        self._spec = spec
        self._cache = cache
        self._enqueue = enqueue
        self._stop = stop
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
        """Cut the open watch stream so the thread notices the stop at once."""
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.shutdown()

    def _opened(self, response: Any) -> None:
        self._response = response
        if self._stop.is_set():
            self.close()

    def start(self) -> None:
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
                    self._enqueue(self._cache.replace_all(self.kind, []))
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
        touched = self._cache.replace_all(kind, items)
        self.relists += 1
        self._served.set()
        self._synced.set()
        self._enqueue(touched)
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
            if kind_of_event in ("ADDED", "MODIFIED"):
                job_key = self._cache.upsert(kind, obj)
            elif kind_of_event == "DELETED":
                job_key = self._cache.remove(kind, obj)
            else:
                continue
            if new_version:
                self._resource_version = str(new_version)
            if job_key:
                self._enqueue((job_key,))
