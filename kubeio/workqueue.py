"""A rate-limited work queue with client-go semantics.

- `dirty` holds keys waiting to be processed, `processing` keys a worker holds: a key is never
  handed to two workers at once, and adding a key already waiting is a no-op (identical pending
  keys collapse). A key added while it is processing is queued again when `done` is called.
- `add_after` parks keys in a heap until their time comes.
- `add_rate_limited` delays a key by the larger of its per-item exponential backoff
  (5 ms · 2^failures, capped at 1000 s) and an overall token bucket (10 qps, burst 100).
- `shutdown(drain=True)` stops accepting keys and lets workers finish what is queued.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from kubeio.clock import Clock, RealClock


@dataclass
class QueueHooks:
    """Metric callbacks (all optional): depth, adds, retries, seconds queued, seconds worked."""

    depth: Callable[[int], None] = lambda _n: None
    added: Callable[[], None] = lambda: None
    retried: Callable[[], None] = lambda: None
    queued_for: Callable[[float], None] = lambda _s: None
    worked_for: Callable[[float], None] = lambda _s: None


@dataclass
class RateLimits:
    base_delay: float = 0.005
    max_delay: float = 1000.0
    qps: float = 10.0
    burst: int = 100


@dataclass(order=True)
class _Parked:
    ready_at: float
    seq: int
    key: str = field(compare=False)


class WorkQueue:
    def __init__(
        self,
        clock: Clock | None = None,
        limits: RateLimits | None = None,
        hooks: QueueHooks | None = None,
    ) -> None:
        self._clock: Clock = clock or RealClock()
        self._limits = limits or RateLimits()
        self._hooks = hooks or QueueHooks()
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._added_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}
        self._parked: list[_Parked] = []
        self._parked_at: dict[str, float] = {}
        self._seq = itertools.count()
        self._failures: dict[str, int] = {}
        self._tokens = float(self._limits.burst)
        self._tokens_at = self._clock.monotonic()
        self._shutting_down = False
        self._drain = True

    # --- adding ------------------------------------------------------------------------------

    def add(self, key: str) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._hooks.added()
        self._dirty.add(key)
        self._added_at.setdefault(key, self._clock.monotonic())
        if key in self._processing:
            return
        self._queue.append(key)
        self._hooks.depth(len(self._queue))
        self._cond.notify()

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutting_down:
                return
            ready_at = self._clock.monotonic() + delay
            # A key parked twice keeps its earliest time, as client-go's delaying queue does.
            if key in self._parked_at and self._parked_at[key] <= ready_at:
                return
            self._parked_at[key] = ready_at
            heapq.heappush(self._parked, _Parked(ready_at, next(self._seq), key))
            self._cond.notify_all()

    def add_batched(self, key: str, period: float) -> None:
        """A change to `key` that may come in a burst (a job's pods bound one by one): a key
        already queued is left alone, since its coming turn reads the change too; otherwise it
        waits `period`, so that the rest of the burst is handled in the same turn. Kubernetes'
        Job controller batches its pod events the same way."""
        with self._cond:  # reentrant: the check and the parking are one step
            if key not in self._dirty:
                self.add_after(key, period)

    def add_rate_limited(self, key: str) -> None:
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            delay = max(self._backoff(failures), self._bucket_delay())
        self._hooks.retried()
        self.add_after(key, delay)

    def _backoff(self, failures: int) -> float:
        exponent = min(failures, 64)
        return float(min(self._limits.base_delay * (2**exponent), self._limits.max_delay))

    def _bucket_delay(self) -> float:
        now = self._clock.monotonic()
        limits = self._limits
        self._tokens = min(limits.burst, self._tokens + (now - self._tokens_at) * limits.qps)
        self._tokens_at = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / limits.qps

    def forget(self, key: str) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    # --- taking ------------------------------------------------------------------------------

    def _promote_parked_locked(self) -> float | None:
        """Move due parked keys into the queue; return seconds until the next one (or None)."""
        now = self._clock.monotonic()
        while self._parked:
            head = self._parked[0]
            if self._parked_at.get(head.key) != head.ready_at:
                heapq.heappop(self._parked)  # superseded by an earlier time
                continue
            if head.ready_at > now:
                return head.ready_at - now
            heapq.heappop(self._parked)
            del self._parked_at[head.key]
            self._add_locked(head.key)
        return None

    def get(self, timeout: float | None = None) -> str | None:
        """The next key, or None on shutdown (once drained) or when `timeout` passes."""
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        with self._cond:
            while True:
                wait = self._promote_parked_locked()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    now = self._clock.monotonic()
                    self._hooks.queued_for(now - self._added_at.pop(key, now))
                    self._started_at[key] = now
                    self._hooks.depth(len(self._queue))
                    return key
                if self._shutting_down:
                    return None
                if deadline is not None:
                    left = deadline - self._clock.monotonic()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            started = self._started_at.pop(key, None)
            if started is not None:
                self._hooks.worked_for(self._clock.monotonic() - started)
            if key in self._dirty:
                self._queue.append(key)
                self._hooks.depth(len(self._queue))
                self._cond.notify()
            elif self._shutting_down and not self._processing:
                self._cond.notify_all()

    # --- lifecycle ---------------------------------------------------------------------------

    def shutdown(self, drain: bool = True) -> None:
        """Stop accepting keys. With `drain`, queued keys are still handed out; without, dropped."""
        with self._cond:
            self._shutting_down = True
            self._parked.clear()
            self._parked_at.clear()
            if not drain:
                self._queue.clear()
                self._dirty.clear()
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """After shutdown: wait until no key is queued or processing; False if `timeout` passed."""
        deadline = self._clock.monotonic() + timeout
        with self._cond:
            while self._queue or self._processing:
                left = deadline - self._clock.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
            return True

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def poke(self) -> None:
        """Wake waiting workers (a fake clock moved forward)."""
        with self._cond:
            self._cond.notify_all()
