"""List-then-watch loops: one thread per resource keeps a consumer informed of every change."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from localcluster.controllers.client import ApiClient, ApiError, ClusterAccess, Resource

logger = logging.getLogger(__name__)

#: The server ends each watch after this long; a new one starts from the last resourceVersion.
WATCH_SECONDS = 10
RETRY_SECONDS = 1.0

# (resource, event type, object). Types: ADDED, MODIFIED, DELETED, and SYNC for every object of
# a fresh list (after which the consumer drops objects of that resource it did not see).
EventHandler = Callable[[Resource, str, dict[str, Any]], None]
SyncHandler = Callable[[Resource, list[dict[str, Any]]], None]


class ResourceWatch(threading.Thread):
    """Lists a resource, then watches it from the list's resourceVersion, forever.

    A watch that expires (410 Gone) or breaks starts over with a fresh list. A resource that
    disappears (404, e.g. its CRD was deleted) ends the thread after reporting an empty list.
    """

    def __init__(
        self,
        access: ClusterAccess,
        resource: Resource,
        on_sync: SyncHandler,
        on_event: EventHandler,
        stop: threading.Event,
    ) -> None:
        super().__init__(name=f"watch-{resource.plural}.{resource.group}", daemon=True)
        self.access = access
        self.resource = resource
        self.on_sync = on_sync
        self.on_event = on_event
        self.stop = stop
        self.gone = threading.Event()

    def run(self) -> None:
        with ApiClient(self.access) as client:
            while not self.stop.is_set() and not self.gone.is_set():
                try:
                    self._list_and_watch(client)
                except ApiError as exc:
                    if exc.code == 0:  # no answer: the connection broke or timed out
                        if self.stop.is_set():
                            return
                        logger.info(
                            "watch interrupted",
                            extra={"resource": self.resource.plural, "error": str(exc)},
                        )
                        self.stop.wait(RETRY_SECONDS)
                        continue
                    if exc.code == 404:
                        self.on_sync(self.resource, [])
                        self.gone.set()
                        return
                    logger.warning(
                        "watch failed", extra={"resource": self.resource.plural, "error": str(exc)}
                    )
                    self.stop.wait(RETRY_SECONDS)
                except ValueError as exc:
                    if self.stop.is_set():
                        return
                    logger.info(
                        "watch interrupted",
                        extra={"resource": self.resource.plural, "error": str(exc)},
                    )
                    self.stop.wait(RETRY_SECONDS)
                except Exception:
                    # A consumer bug must not silently end the watch: log it and start over.
                    logger.exception(
                        "watch handler failed", extra={"resource": self.resource.plural}
                    )
                    self.stop.wait(RETRY_SECONDS)

    def _list_and_watch(self, client: ApiClient) -> None:
        items, version = client.list_all(self.resource.path())
        self.on_sync(self.resource, items)
        while not self.stop.is_set():
            for event in client.watch(self.resource.path(), version, WATCH_SECONDS):
                kind, obj = event.get("type", ""), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        return  # expired: list again
                    raise ApiError(int(obj.get("code") or 500), obj)
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self.on_event(self.resource, kind, obj)
                if self.stop.is_set():
                    return
