"""The Job watch's store: the cache, plus a word to the elastic autoscaler when a job turns
Pending."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from controller.elastic.decide.views import job_phase
from controller.elastic.decide.wake import has_elastic_task, wakes_autoscaler
from controller.job.shell.cache import Cache
from shared.objectkeys import object_key
from shared.wire import WireObject


class JobPhaseStore:
    """The cache as the Job watch feeds it, telling listeners when a job turns Pending while the
    cluster has elastic jobs (the elastic autoscaler then plans at once instead of at its next
    period)."""

    def __init__(self, cache: Cache, listeners: list[Callable[[], None]]) -> None:
        self._cache = cache
        self._listeners = listeners
        # Only the Job watch's thread calls in.
        self._phases: dict[str, str | None] = {}
        self._elastic: set[str] = set()

    def replace_all(self, kind: str, items: Iterable[WireObject]) -> set[str]:
        listed = list(items)
        before, self._phases = self._phases, {}  # jobs gone since the last listing are dropped
        self._elastic = {object_key(obj) for obj in listed if has_elastic_task(obj)}
        for obj in listed:
            self._saw(obj, before)
        return self._cache.replace_all(kind, listed)

    def upsert(self, kind: str, obj: WireObject) -> str | None:
        key = object_key(obj)
        if has_elastic_task(obj):
            self._elastic.add(key)
        else:
            self._elastic.discard(key)
        self._saw(obj, self._phases)
        return self._cache.upsert(kind, obj)

    def remove(self, kind: str, obj: WireObject) -> str | None:
        key = object_key(obj)
        self._phases.pop(key, None)
        self._elastic.discard(key)
        return self._cache.remove(kind, obj)

    def _saw(self, job: WireObject, before: dict[str, str | None]) -> None:
        key, phase = object_key(job), job_phase(job)
        previous = before.get(key)
        self._phases[key] = phase
        if wakes_autoscaler(previous, phase, bool(self._elastic)):
            for listener in self._listeners:
                listener()
