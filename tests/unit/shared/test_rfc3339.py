"""Kubernetes' metav1.Time stamps, written and read in one place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from shared.rfc3339 import format_time, parse_time


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        pytest.param(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05Z", id="utc"),
        pytest.param(
            datetime(2026, 1, 2, 3, 4, 5, 999_999, tzinfo=UTC),
            "2026-01-02T03:04:05Z",
            id="seconds-only",
        ),
        pytest.param(
            datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-02T03:04:05Z",
            id="offset-to-utc",
        ),
        pytest.param(
            datetime(2026, 1, 2, 3, 4, 5),  # noqa: DTZ001 - a naive time on purpose
            "2026-01-02T03:04:05Z",
            id="naive-is-utc",
        ),
    ],
)
def test_format_time(moment: datetime, text: str) -> None:
    assert format_time(moment) == text


@pytest.mark.parametrize(
    ("value", "moment"),
    [
        pytest.param("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), id="z"),
        pytest.param(
            "2026-01-02T05:04:05+02:00", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), id="offset"
        ),
        pytest.param(
            "2026-01-02T03:04:05.250000Z",
            datetime(2026, 1, 2, 3, 4, 5, 250_000, tzinfo=UTC),
            id="fraction",
        ),
        pytest.param("2026-01-02T03:04:05", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), id="naive"),
        pytest.param(None, None, id="none"),
        pytest.param("", None, id="empty"),
        pytest.param("yesterday", None, id="not-a-time"),
    ],
)
def test_parse_time(value: object, moment: datetime | None) -> None:
    parsed = parse_time(value)
    assert parsed == moment
    if parsed is not None:
        assert parsed.utcoffset() == timedelta(0)


def test_a_written_stamp_reads_back() -> None:
    moment = datetime(2026, 11, 27, 8, 0, 1, tzinfo=UTC)
    assert parse_time(format_time(moment)) == moment
