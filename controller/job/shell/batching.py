"""The pod and PodGroup watches' store: the cache, with the changes that may wait for the rest
of their burst queued with `WorkQueue.add_batched` (`controller.job.decide.urgency`)."""

from __future__ import annotations

from collections.abc import Iterable

from controller.job.decide.urgency import reacts_at_once
from controller.job.shell.cache import Cache
from kubeio.workqueue import WorkQueue
from shared.objectkeys import object_key
from shared.wire import WireObject


class BatchingStore:
    """Feeds the cache; a change that reacts at once returns its job key to the reflector
    (which queues it), the others are queued here to wait `period`. Listings and deletions
    always react at once."""

    def __init__(self, cache: Cache, queue: WorkQueue, period: float) -> None:
        self._cache = cache
        self._queue = queue
        self._period = period

    def replace_all(self, kind: str, items: Iterable[WireObject]) -> set[str]:
        return self._cache.replace_all(kind, items)

    def upsert(self, kind: str, obj: WireObject) -> str | None:
        before = self._cache.get(kind, object_key(obj))
        job_key = self._cache.upsert(kind, obj)
        if job_key is None or self._period <= 0 or reacts_at_once(kind, before, obj):
            return job_key
        self._queue.add_batched(job_key, self._period)
        return None

    def remove(self, kind: str, obj: WireObject) -> str | None:
        return self._cache.remove(kind, obj)
