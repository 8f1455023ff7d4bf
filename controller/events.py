"""Kubernetes Events (core/v1) on Jobs, with repeats aggregated into `count`.

Recording is best effort: a failed event write is logged and never fails a reconcile.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections import OrderedDict
from typing import Any

from controller.clock import Clock, RealClock
from controller.errors import KubeError, NotFoundError
from controller.kube import EVENTS, Kube

log = logging.getLogger(__name__)

COMPONENT = "vc-controller-manager"
_REMEMBERED = 4096


def _time(clock: Clock) -> str:
    return clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, kube: Kube, instance: str, clock: Clock | None = None) -> None:
        self._kube = kube
        self._instance = instance
        self._clock: Clock = clock or RealClock()
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, int]] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        uid = str(meta.get("uid") or "")
        key = (uid, event_type, reason, message)
        now = _time(self._clock)
        with self._lock:
            seen = self._seen.get(key)
        try:
            if seen is not None:
                name, count = seen
                try:
                    self._kube.merge_patch(
                        EVENTS, namespace, name, {"count": count + 1, "lastTimestamp": now}
                    )
                    self._remember(key, name, count + 1)
                    return
                except NotFoundError:
                    pass
            name = f"{meta.get('name', 'job')}.{secrets.token_hex(8)}"
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

    def _remember(self, key: tuple[str, str, str, str], name: str, count: int) -> None:
        with self._lock:
            self._seen[key] = (name, count)
            self._seen.move_to_end(key)
            while len(self._seen) > _REMEMBERED:
                self._seen.popitem(last=False)
