"""The one poll with a deadline of vcjob's tests: `wait_for(read, done, what)` and
`wait_until(what, check)`. A test never asserts after a fixed sleep; it waits for something it can
observe and then asserts.

    from tests.support.polling import wait_for, wait_until
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    read: Callable[[], Any],
    done: Callable[[Any], bool],
    what: str,
    timeout: float = 60.0,
    interval: float = 0.3,
    *,
    retry_on: tuple[type[Exception], ...] = (),
) -> Any:
    """Poll `read()` until `done` holds for what it returned; return that, or fail naming `what`
    and the last value seen. The one poll-with-a-deadline of vcjob's tests: `interval` is the
    pause between reads, and an exception of a `retry_on` type counts as "not yet" (a server
    that is restarting, say) and is shown as the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = read()
        except retry_on as exc:
            last = exc
        else:
            if done(last):
                return last
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {last!r}")


def wait_until(
    what: str,
    check: Callable[[], Any],
    timeout: float = 60.0,
    interval: float = 0.3,
    *,
    retry_on: tuple[type[Exception], ...] = (),
) -> Any:
    """Poll `check()` until it returns something true, and return that; or fail naming `what`."""
    return wait_for(check, bool, what, timeout, interval, retry_on=retry_on)
