"""Workers that take keys from one work queue while this process leads: the loop the CronJob and
Queue controllers share (the job controller has its own runner, with its own cache).

A subclass names its informers, the keys a periodic resync re-adds, how one key is handled and
what a failure costs. Workers wait until every informer has listed once; a key taken while
another replica leads comes back later; `handle` may ask for the key again after a delay.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Final

from controller.objectstore import Informer, OnChange
from kubeio.client import Resource
from kubeio.informer import SharedWatches
from kubeio.kubelike import KubeLike
from kubeio.workqueue import WorkQueue

RESYNC_SECONDS: Final = 30.0
NOT_LEADER_RETRY_SECONDS: Final = 5.0


class KeyWorkers:
    thread_prefix = "worker"

    def __init__(
        self, is_leader: Callable[[], bool], workers: int, watches: SharedWatches | None = None
    ) -> None:
        self.is_leader = is_leader
        self.queue = WorkQueue()
        self._workers = workers
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watches = watches

    def _informer(
        self, kube: KubeLike, resource: Resource, on_change: OnChange, **options: Any
    ) -> Informer:
        """An informer that stops with these workers, on the process's shared watches."""
        return Informer(kube, resource, on_change, self._stop, watches=self._watches, **options)

    # --- what a subclass provides --------------------------------------------------------

    def informers(self) -> list[Informer]:
        raise NotImplementedError

    def resync_keys(self) -> Iterable[str]:
        raise NotImplementedError

    def handle(self, key: str) -> float | None:
        """Sync `key`; a number asks for it again after that many seconds."""
        raise NotImplementedError

    def failed(self, key: str, exc: Exception) -> None:
        raise NotImplementedError

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        for informer in self.informers():
            informer.start()
        for i in range(self._workers):
            self._spawn(f"{self.thread_prefix}-worker-{i}", self._work)
        self._spawn(f"{self.thread_prefix}-resync", self._resync)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def shutdown(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self.queue.shutdown(drain=False)
        for thread in self._threads:
            thread.join(timeout)

    def _resync(self) -> None:
        # A lost timed requeue (or a leadership change) is repaired within this period.
        while not self._stop.wait(RESYNC_SECONDS):
            for key in self.resync_keys():
                self.queue.add(key)

    def _work(self) -> None:
        while not all(informer.synced for informer in self.informers()):
            if self._stop.wait(0.05):
                return
        while True:
            key = self.queue.get(timeout=0.5)
            if key is None:
                if self.queue.shutting_down:
                    return
                continue
            try:
                if not self.is_leader():
                    self.queue.add_after(key, NOT_LEADER_RETRY_SECONDS)
                    continue
                again = self.handle(key)
                self.queue.forget(key)
                if again is not None:
                    self.queue.add_after(key, max(0.0, again))
            except Exception as exc:
                self.failed(key, exc)
            finally:
                self.queue.done(key)
