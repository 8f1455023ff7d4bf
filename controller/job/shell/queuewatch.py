"""Queues in the job controller's cache. A Queue that appears, goes or changes state can unblock
(or block) every Pending job submitted to it, and no other event would bring those jobs: such a
change enqueues them all. The Queue's counts, rewritten with every PodGroup, do not."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from controller.job.decide.blocked import queue_verdict_changed
from controller.job.shell.cache import QUEUE, Cache
from shared.objectkeys import object_key
from shared.wire import WireObject


class QueueStore:
    def __init__(self, cache: Cache, enqueue: Callable[[Iterable[str]], None]) -> None:
        self._cache = cache
        self._enqueue = enqueue

    def replace_all(self, kind: str, items: Iterable[WireObject]) -> set[str]:
        fresh = {object_key(q): q for q in items}
        before = {object_key(q): q for q in self._cache.queues()}
        self._cache.replace_all(kind, fresh.values())
        keys: set[str] = set()
        for name in before.keys() | fresh.keys():
            if queue_verdict_changed(before.get(name), fresh.get(name)):
                keys.update(self._cache.jobs_in_queue(name))
        return keys

    def upsert(self, kind: str, obj: WireObject) -> str | None:
        name = object_key(obj)
        old = self._cache.get(QUEUE, name)
        self._cache.upsert(kind, obj)
        if queue_verdict_changed(old, self._cache.get(QUEUE, name)):
            self._enqueue(self._cache.jobs_in_queue(name))
        return None

    def remove(self, kind: str, obj: WireObject) -> str | None:
        name = object_key(obj)
        old = self._cache.get(QUEUE, name)
        self._cache.remove(kind, obj)
        if old is not None:
            self._enqueue(self._cache.jobs_in_queue(name))
        return None
