"""The webhook process's own settings: TLS read size and the request-head deadline rule."""

from __future__ import annotations

import asyncio.sslproto

import pytest

from webhook.server import (
    API_SERVER_IDLE_CONNECTION_SECONDS,
    IDLE_KEEP_ALIVE_SECONDS,
    MMAP_THRESHOLD_BYTES,
    TLS_READ_BYTES,
    HeadCheck,
    bound_tls_reads,
    head_check,
)


def test_tls_reads_are_bounded_below_the_mmap_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = asyncio.sslproto.SSLProtocol
    # Restored after the test: the setting is process-wide.
    monkeypatch.setattr(protocol, "max_size", protocol.max_size)
    assert protocol.max_size > MMAP_THRESHOLD_BYTES  # what asyncio does by itself
    assert bound_tls_reads() is True
    assert protocol.max_size == TLS_READ_BYTES
    # A read's bytes object (the size plus its header) must stay on the heap.
    assert TLS_READ_BYTES + 64 < MMAP_THRESHOLD_BYTES


def test_without_the_setting_nothing_is_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = asyncio.sslproto.SSLProtocol
    monkeypatch.delattr(protocol, "max_size")
    assert bound_tls_reads() is False
    assert not hasattr(protocol, "max_size")


@pytest.mark.parametrize(
    ("started", "now", "expected"),
    [
        (None, 100.0, "idle"),  # a request is being handled, or the connection is idle
        (100.0, 100.0, 110.0),  # the head just began: look again at its deadline
        (95.0, 100.0, 105.0),  # a later head than the one the timer was set for
        (90.0, 100.0, "overdue"),  # exactly at the deadline
        (50.0, 100.0, "overdue"),
    ],
)
def test_head_check(started: float | None, now: float, expected: HeadCheck) -> None:
    assert head_check(started, now, 10.0) == expected


def test_idle_connections_outlive_the_api_servers_own_idle_timeout() -> None:
    # The client (the API server) must be the side that closes an idle connection.
    assert IDLE_KEEP_ALIVE_SECONDS > API_SERVER_IDLE_CONNECTION_SECONDS
