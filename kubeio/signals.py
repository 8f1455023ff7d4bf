"""Stop signals that cannot deadlock.

A Python signal handler runs in the main thread between two bytecodes, possibly while that
thread holds a lock — for instance inside `threading.Event.wait`, which holds the Event's
Condition lock around its bookkeeping. A handler that calls `Event.set()` then waits for a lock
its own thread holds, forever: the process ignores every later SIGTERM and never releases its
Lease. So the handler here takes no lock: it stores the signal number and writes one byte to a
non-blocking pipe (a self-pipe). A watcher thread, outside any handler, reads the pipe and sets
the ordinary `threading.Event` the rest of the process waits on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
from collections.abc import Iterable
from types import FrameType
from typing import Final

log = logging.getLogger(__name__)

STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    """`install()` in the main thread; `event` is set once a stop signal arrived."""

    def __init__(
        self,
        signals: Iterable[signal.Signals] = STOP_SIGNALS,
        event: threading.Event | None = None,
    ) -> None:
        self.signals = tuple(signals)
        self.event = event if event is not None else threading.Event()
        self.received: signal.Signals | None = None
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._watcher = threading.Thread(target=self._watch, name="stop-signals", daemon=True)

    def install(self) -> threading.Event:
        for signum in self.signals:
            signal.signal(signum, self._handle)
        self._watcher.start()
        return self.event

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        # No lock, no logging, no Event: an attribute store and a non-blocking write.
        self.received = signal.Signals(signum)
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write, b"\0")

    def _watch(self) -> None:
        while True:
            readable, _, _ = select.select([self._read], [], [])
            if not readable:
                continue
            try:
                data = os.read(self._read, 64)
            except BlockingIOError:
                continue
            if not data:
                return
            if not self.event.is_set():
                name = self.received.name if self.received is not None else "signal"
                log.info("stop signal received", extra={"signal": name})
            self.event.set()

    def trigger(self) -> None:
        """Stop as if a signal arrived (the same path, for callers without a signal)."""
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write, b"\0")


def install_stop_signals(
    event: threading.Event | None = None, signals: Iterable[signal.Signals] = STOP_SIGNALS
) -> threading.Event:
    """Install deadlock-free handlers for `signals`; the returned Event (`event` when given)
    is set on the first."""
    return StopSignals(signals, event).install()
