"""Kubernetes Events (core/v1) on Jobs, with repeats aggregated into `count`.

Recording is best effort: a failed event write is logged and never fails a reconcile.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from kubeio.client import EVENTS
from kubeio.clock import Clock, RealClock
from kubeio.errors import KubeError, NotFoundError
from kubeio.kubelike import KubeLike
from shared.rfc3339 import format_time
from shared.wire import metadata, namespace_of, uid_of

log = logging.getLogger(__name__)

COMPONENT = "vc-controller-manager"
_REMEMBERED = 4096
_BACKLOG = 10_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def unix_nanos(moment: datetime) -> int:
    """Nanoseconds since the epoch, exactly (no float rounding)."""
    delta = moment.astimezone(UTC) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


# client-go's EventAggregator: from the 10th Event of one object, type and reason with a distinct
# message within 10 minutes on, they are combined into one Event that counts them.
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_WINDOW_SECONDS = 600.0
AGGREGATED_PREFIX = "(combined from similar events): "


class SimilarEvents:
    """Which Events to combine: per (object uid, type, reason), the distinct messages seen in
    the current window."""

    def __init__(
        self,
        max_events: int = AGGREGATE_MAX_EVENTS,
        window_seconds: float = AGGREGATE_WINDOW_SECONDS,
        remembered: int = _REMEMBERED,
    ) -> None:
        self._max = max_events
        self._window = window_seconds
        self._remembered = remembered
        self._seen: OrderedDict[tuple[str, str, str], tuple[float, set[str]]] = OrderedDict()

    def observe(self, similar: tuple[str, str, str], message: str, at: float) -> tuple[str, str]:
        """(the message part of the Event's identity, the message to write): the message itself
        while few distinct ones were seen, then one combined identity with a marked message."""
        first, messages = self._seen.get(similar, (at, set()))
        if at - first > self._window:
            first, messages = at, set()
        messages.add(message)
        self._seen[similar] = (first, messages)
        self._seen.move_to_end(similar)
        while len(self._seen) > self._remembered:
            self._seen.popitem(last=False)
        if len(messages) >= self._max:
            return "", AGGREGATED_PREFIX + message
        return message, message


def event_name(object_name: str, nanos: int) -> str:
    """client-go's `<object>.<unix nanoseconds in hex>`: names sort by time, so listings
    (and `kubectl describe`, which orders by name among equal timestamps) keep the order."""
    return f"{object_name}.{nanos:x}"


class EventRecorder:
    """Records Events; with `asynchronous`, a background thread writes them (like client-go's
    broadcaster) so a reconcile never waits for its Events and pods are not queued behind them."""

    def __init__(
        self,
        kube: KubeLike,
        instance: str,
        clock: Clock | None = None,
        *,
        asynchronous: bool = False,
    ) -> None:
        self._kube = kube
        self._instance = instance
        self._clock: Clock = clock or RealClock()
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: queue.Queue[tuple[dict[str, Any], str, str, str, datetime] | None] | None = (
            None
        )
        self._last_nanos = 0
        self._similar = SimilarEvents()
        self._thread: threading.Thread | None = None
        if asynchronous:
            self._pending = queue.Queue(maxsize=_BACKLOG)
            self._thread = threading.Thread(
                target=self._drain, args=(self._pending,), name="events", daemon=True
            )
            self._thread.start()

    def record(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        if self._pending is None:
            self._write(obj, event_type, reason, message, self._clock.now())
            return
        try:
            self._pending.put_nowait((obj, event_type, reason, message, self._clock.now()))
        except queue.Full:
            log.warning("event dropped, backlog full", extra={"reason": reason})

    def _drain(
        self, pending: queue.Queue[tuple[dict[str, Any], str, str, str, datetime] | None]
    ) -> None:
        while (item := pending.get()) is not None:
            try:
                self._write(*item)
            finally:
                pending.task_done()
        pending.task_done()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued Event was written; False if `timeout` passed first."""
        if self._pending is None:
            return True
        deadline = time.monotonic() + timeout
        while self._pending.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (up to `timeout`), then stop the background thread."""
        if self._pending is None or self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._pending.put(None, timeout=timeout)
        self._thread.join(timeout)

    def _write(
        self, obj: dict[str, Any], event_type: str, reason: str, message: str, moment: datetime
    ) -> None:
        now = format_time(moment)
        meta = metadata(obj)
        namespace = namespace_of(obj) or "default"
        uid = uid_of(obj)
        with self._lock:
            identity, message = self._similar.observe(
                (uid, event_type, reason), message, moment.timestamp()
            )
            key = (uid, event_type, reason, identity)
            seen = self._seen.get(key)
        try:
            if seen is not None:
                name, count = seen
                try:
                    self._kube.merge_patch(
                        EVENTS,
                        namespace,
                        name,
                        {"count": count + 1, "lastTimestamp": now, "message": message},
                    )
                    self._remember(key, name, count + 1)
                    return
                except NotFoundError:
                    pass
            name = event_name(str(meta.get("name", "job")), self._next_nanos(moment))
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {
                    "apiVersion": obj.get("apiVersion"),
                    "kind": obj.get("kind"),
                    "name": meta.get("name"),
                    "namespace": namespace,
                    "uid": uid,
                    "resourceVersion": meta.get("resourceVersion"),
                },
                "type": event_type,
                "reason": reason,
                "message": message,
                "source": {"component": COMPONENT},
                "reportingComponent": COMPONENT,
                "reportingInstance": self._instance,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            }
            self._kube.create(EVENTS, namespace, body)
            self._remember(key, name, 1)
        except KubeError as exc:
            log.warning(
                "event not recorded",
                extra={"namespace": namespace, "reason": reason, "error": str(exc)},
            )

    def _next_nanos(self, moment: datetime) -> int:
        """The moment's nanoseconds, strictly increasing per recorder (two Events in the same
        nanosecond — or from a clock that stands still — still get distinct, ordered names)."""
        with self._lock:
            self._last_nanos = max(unix_nanos(moment), self._last_nanos + 1)
            return self._last_nanos

    def _remember(self, key: tuple[str, str, str, str], name: str, count: int) -> None:
        with self._lock:
            self._seen[key] = (name, count)
            self._seen.move_to_end(key)
            while len(self._seen) > _REMEMBERED:
                self._seen.popitem(last=False)
