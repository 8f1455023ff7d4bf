"""Stop signals: the handler takes no lock, so a signal that lands while the main thread is
inside `Event.wait` (holding the Event's lock) still stops the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from kubeio.signals import StopSignals

# The main thread waits on the stop Event in a tight loop, so most signals arrive while it is
# inside Event.wait: the situation in which a handler calling Event.set deadlocks.
CHILD = textwrap.dedent(
    """
    import sys, threading
    from kubeio.signals import install_stop_signals
    stop = install_stop_signals()
    print("ready", flush=True)
    while not stop.wait(0.0001):
        pass
    print("stopped", flush=True)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_event_wait_stops_the_process(signum: signal.Signals) -> None:
    for _ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
            time.sleep(0.05)  # lets the child get from its print into the wait loop
            child.send_signal(signum)
            assert child.wait(timeout=10) == 0
            assert child.stdout.read().strip() == "stopped"
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_trigger_and_a_second_signal_are_harmless() -> None:
    event = threading.Event()
    stops = StopSignals(signals=(), event=event)
    stops.install()
    stops.trigger()
    stops.trigger()
    assert event.wait(5.0)


def test_the_handler_records_the_signal_without_setting_the_event_itself() -> None:
    stops = StopSignals(signals=())
    stops._handle(signal.SIGTERM, None)  # as the interpreter would call it
    assert stops.received == signal.SIGTERM
    assert not stops.event.is_set()  # only the watcher thread sets it
    stops._watcher.start()
    assert stops.event.wait(5.0)
