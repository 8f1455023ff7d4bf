"""Go-style durations for policy timeouts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.duration import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("250ms", timedelta(milliseconds=250)),
        ("1.5s", timedelta(seconds=1.5)),
        ("0", timedelta(0)),
        ("-2s", timedelta(seconds=-2)),
    ],
)
def test_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "5x", "s", "1h 2m", "abc"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=45), "45s"),
        (timedelta(minutes=1, seconds=2), "1m2s"),
        (timedelta(hours=1, minutes=2, seconds=3), "1h2m3s"),
    ],
)
def test_format(delta: timedelta, text: str) -> None:
    assert format_duration(delta) == text
