"""Watch streams: newline-delimited `{"type", "object"}` events in resourceVersion order.

A watch from resourceVersion "0" or none starts with synthetic ADDED events for the current
state; from a later resourceVersion it replays the kept history, or answers an ERROR event with
a 410 Expired Status when that history has been compacted. Label and field selectors turn
transitions into ADDED/DELETED as kube's watch cache does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from localcluster.apiserver import errors, fieldselect, tables
from localcluster.apiserver.registry import ResourceType
from localcluster.apiserver.rest import Api, ApiRequest
from localcluster.apiserver.storage import ExpiredError, Watcher, WatchEvent
from shared import jsoncodec, selectors

DEFAULT_TIMEOUT = 1800.0


@dataclass
class WatchOptions:
    bookmark_interval: float = 10.0
    # Fault injection: cut the stream after this many events (None = never).
    cut_after: int | None = None


def _encode(kind: str, obj: dict[str, Any]) -> bytes:
    return jsoncodec.dumps({"type": kind, "object": obj}) + b"\n"


class WatchStream:
    def __init__(self, api: Api, request: ApiRequest, as_table: bool, include_object: str) -> None:
        self.api = api
        self.request = request
        self.resource: ResourceType = request.resource
        self.as_table = as_table
        self.include_object = include_object
        self.label_selector = api._label_selector(request)
        self.field_selector = fieldselect.parse(
            self.resource.group, self.resource.plural, request.query.get("fieldSelector", "")
        )
        self.namespace = request.namespace if self.resource.namespaced else None
        self.headers_sent = False

    def matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        if self.label_selector and not selectors.matches(
            self.label_selector, meta.get("labels") or {}
        ):
            return False
        return not self.field_selector or selectors.matches(
            self.field_selector,
            fieldselect.field_values(self.resource.group, self.resource.plural, obj),
        )

    def translate(self, event: WatchEvent) -> str | None:
        """The event type this watcher sees, or None when it is filtered out."""
        now_matches = self.matches(event.obj)
        if event.type == "DELETED":
            return "DELETED" if self.matches(event.old or event.obj) else None
        was_matching = event.old is not None and self.matches(event.old)
        if event.type == "MODIFIED" and not self.label_selector and not self.field_selector:
            return "MODIFIED" if now_matches else None
        if now_matches and was_matching:
            return "MODIFIED"
        if now_matches:
            return "ADDED"
        if was_matching:
            return "DELETED"
        return None

    def encode(
        self, kind: str, obj: dict[str, Any], cache: dict[str, bytes] | None = None
    ) -> bytes:
        if self.as_table:
            list_meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            table = tables.build_table(
                self.resource, [obj], list_meta, self.include_object, headers=not self.headers_sent
            )
            self.headers_sent = True
            return _encode(kind, table)
        key = f"{kind}/{self.resource.version}"
        if cache is not None and key in cache:
            return cache[key]
        encoded = _encode(kind, self.api.present(self.resource, obj))
        if cache is not None:
            cache[key] = encoded
        return encoded

    def bookmark(self) -> bytes:
        obj = {
            "kind": self.resource.kind,
            "apiVersion": self.resource.group_version,
            "metadata": {"resourceVersion": str(self.api.store.rv)},
        }
        return _encode("BOOKMARK", obj)

    async def events(
        self, options: WatchOptions, disconnected: Callable[[], bool]
    ) -> AsyncGenerator[bytes, None]:
        store = self.api.store
        query = self.request.query
        rv_param = query.get("resourceVersion", "")
        timeout = float(query.get("timeoutSeconds") or DEFAULT_TIMEOUT)
        bookmarks = query.get("allowWatchBookmarks", "").lower() == "true"
        send_initial = query.get("sendInitialEvents", "").lower() == "true"
        deadline = time.monotonic() + timeout

        watcher = Watcher(self.resource.storage_key, lambda e: self.translate(e) is not None)
        initial: list[bytes] = []
        if not rv_param or rv_param == "0" or send_initial:
            for obj in store.list(self.resource.storage_key, self.namespace):
                if self.matches(obj):
                    initial.append(self.encode("ADDED", obj))
            if send_initial and bookmarks:
                mark = {
                    "kind": self.resource.kind,
                    "apiVersion": self.resource.group_version,
                    "metadata": {
                        "resourceVersion": str(store.rv),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    },
                }
                initial.append(_encode("BOOKMARK", mark))
        else:
            try:
                requested = int(rv_param)
            except ValueError:
                yield _encode(
                    "ERROR", errors.bad_request(f"invalid resource version: {rv_param}").to_status()
                )
                return
            try:
                replay = store.events_since(self.resource.storage_key, requested)
            except ExpiredError as exc:
                yield _encode("ERROR", errors.gone(str(exc)).to_status())
                return
            for past in replay:
                past_kind = self.translate(past)
                if past_kind is not None:
                    initial.append(self.encode(past_kind, past.obj, past.encoded))
        store.add_watcher(watcher)
        sent = 0
        try:
            for chunk in initial:
                yield chunk
                sent += 1
                if options.cut_after is not None and sent >= options.cut_after:
                    return
            last_bookmark = time.monotonic()
            while not disconnected():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                wait = min(remaining, options.bookmark_interval if bookmarks else 1.0, 1.0)
                try:
                    event: WatchEvent | None = await asyncio.wait_for(
                        watcher.queue.get(), timeout=wait
                    )
                except TimeoutError:
                    if bookmarks and time.monotonic() - last_bookmark >= options.bookmark_interval:
                        last_bookmark = time.monotonic()
                        yield self.bookmark()
                    continue
                if event is None:
                    return
                kind = self.translate(event)
                if kind is None:
                    continue
                yield self.encode(kind, event.obj, event.encoded)
                sent += 1
                if options.cut_after is not None and sent >= options.cut_after:
                    return
        finally:
            store.remove_watcher(watcher)
