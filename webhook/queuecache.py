"""An in-memory cache of Queues kept by list + watch, so admission never calls the API server.

A background thread lists the Queues, then watches from the list's resourceVersion; a `410 Gone`
(or a watch that cannot resume) leads to a fresh list. When the Queue CRD is not installed the
cache says so (`crd_installed` False) and the webhook skips the queue check with a warning; the
CRD is looked for again periodically.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any, Final, Protocol

from pydantic import ValidationError

from kubeio.client import QUEUES, ApiClient, Kube
from kubeio.errors import KubeError, NotFoundError
from shared.models import Queue

log = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS: Final = 300
MISSING_CRD_RECHECK_SECONDS: Final = 30.0
MAX_BACKOFF_SECONDS: Final = 30.0


class QueueCRDMissingError(Exception):
    """The API server does not serve scheduling.volcano.sh/v1beta1 queues."""


class WatchExpiredError(Exception):
    """The watch's resourceVersion is too old (410 Gone): list again."""


class QueueSource(Protocol):
    def list(self) -> tuple[list[dict[str, Any]], str]:
        """All Queues as dicts and the list's resourceVersion."""
        ...

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[dict[str, Any]]:
        """Watch events ({type, object}) after `resource_version`, until the timeout."""
        ...


class KubeQueueSource:
    """Queues through kubeio's client, as plain dicts."""

    def __init__(self, api_client: ApiClient) -> None:
        self._kube = Kube(api_client, qps=0)

    def list(self) -> tuple[list[dict[str, Any]], str]:
        try:
            return self._kube.list(QUEUES)
        except NotFoundError as exc:
            raise QueueCRDMissingError from exc

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[dict[str, Any]]:
        try:
            yield from self._kube.watch(
                QUEUES, resource_version=resource_version, timeout_seconds=timeout_seconds
            )
        except NotFoundError as exc:
            raise QueueCRDMissingError from exc
        except KubeError as exc:
            if exc.status == 410:
                raise WatchExpiredError from exc
            raise


class QueueCache:
    """Thread-safe Queue lookups for the validator (implements webhook.queueview.QueueView)."""

    def __init__(
        self,
        source: QueueSource,
        missing_crd_recheck: float = MISSING_CRD_RECHECK_SECONDS,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
    ) -> None:
        self._source = source
        self._missing_crd_recheck = missing_crd_recheck
        self._watch_timeout = watch_timeout
        self._lock = threading.Lock()
        self._queues: dict[str, Queue] = {}
        self._synced = threading.Event()
        self._crd_installed = True
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # QueueView

    def get(self, name: str) -> Queue | None:
        with self._lock:
            return self._queues.get(name)

    def children(self, name: str) -> list[str]:
        with self._lock:
            return sorted(n for n, q in self._queues.items() if q.spec.parent == name)

    def hierarchies(self) -> dict[str, str]:
        """The `volcano.sh/hierarchy` annotation of every queue that has one, by name."""
        with self._lock:
            queues = list(self._queues.values())
        out: dict[str, str] = {}
        for queue in queues:
            value = (queue.metadata.get("annotations") or {}).get("volcano.sh/hierarchy")
            if isinstance(value, str) and value:
                out[queue.name] = value
        return out

    # State

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    @property
    def crd_installed(self) -> bool:
        return self._crd_installed

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    # Lifecycle

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="queue-cache", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                resource_version = self._relist()
                backoff = 0.5
                self._watch_until_expired(resource_version)
            except QueueCRDMissingError:
                if self._crd_installed or not self._synced.is_set():
                    log.warning("queue CRD not installed; queue checks are skipped")
                with self._lock:
                    self._queues.clear()
                self._crd_installed = False
                self._synced.set()
                self._stop.wait(self._missing_crd_recheck)
            except WatchExpiredError:
                log.info("queue watch expired; listing again")
            except Exception as exc:
                log.warning("queue cache error; retrying", extra={"error": str(exc)})
                self._stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)

    def _relist(self) -> str:
        items, resource_version = self._source.list()
        queues: dict[str, Queue] = {}
        for item in items:
            queue = self._parse(item)
            if queue is not None:
                queues[queue.name] = queue
        with self._lock:
            self._queues = queues
        if not self._crd_installed:
            log.info("queue CRD found; queue checks are on")
        self._crd_installed = True
        self._synced.set()
        log.info("queue cache synced", extra={"queues": len(queues)})
        return resource_version

    def _watch_until_expired(self, resource_version: str) -> None:
        while not self._stop.is_set():
            for event in self._source.watch(resource_version, self._watch_timeout):
                if self._stop.is_set():
                    return
                resource_version = self._apply(event, resource_version)

    def _apply(self, event: dict[str, Any], resource_version: str) -> str:
        kind = event.get("type")
        obj = event.get("raw_object", event.get("object"))
        if not isinstance(obj, dict):
            return resource_version
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise WatchExpiredError
            raise RuntimeError(f"queue watch error: {obj.get('message')}")
        metadata = obj.get("metadata")
        new_version = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
        if kind in ("ADDED", "MODIFIED"):
            queue = self._parse(obj)
            if queue is not None:
                with self._lock:
                    self._queues[queue.name] = queue
        elif kind == "DELETED":
            name = metadata.get("name") if isinstance(metadata, dict) else None
            with self._lock:
                self._queues.pop(str(name), None)
        return str(new_version) if new_version else resource_version

    @staticmethod
    def _parse(item: dict[str, Any]) -> Queue | None:
        try:
            queue = Queue.from_wire(item)
        except ValidationError:
            log.warning("ignoring an unreadable queue", extra={"queue": str(item.get("metadata"))})
            return None
        return queue if queue.name else None
