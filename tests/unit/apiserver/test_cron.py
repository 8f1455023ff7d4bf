"""CronJob schedules parsed and evaluated as robfig/cron's standard parser does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from localcluster.apiserver.cron import most_recent, next_time, parse, times_between


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "moment", "matches"),
    [
        ("*/5 * * * *", "2026-03-02T10:15:00", True),
        ("*/5 * * * *", "2026-03-02T10:16:00", False),
        ("0 9-17 * * MON-FRI", "2026-03-02T09:00:00", True),  # a Monday
        ("0 9-17 * * MON-FRI", "2026-03-01T09:00:00", False),  # a Sunday
        ("0 0 1 jan *", "2026-01-01T00:00:00", True),
        ("@hourly", "2026-01-01T07:00:00", True),
        ("@daily", "2026-01-01T07:00:00", False),
        ("30 2 * * 0", "2026-03-01T02:30:00", True),
        # Both days restricted: either one matches, as in cron.
        ("0 0 13 * 5", "2026-03-13T00:00:00", True),
        ("0 0 13 * 5", "2026-03-06T00:00:00", True),  # a Friday
        ("0 0 13 * 5", "2026-03-07T00:00:00", False),
        ("5,10-12 * * * *", "2026-03-07T00:11:00", True),
        ("1-20/10 * * * *", "2026-03-07T00:11:00", True),
        ("1-20/10 * * * *", "2026-03-07T00:12:00", False),
    ],
)
def test_matches(schedule: str, moment: str, matches: bool) -> None:
    assert parse(schedule).matches(at(moment)) is matches


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("* * * *", "expected exactly 5 fields, found 4"),
        ("60 * * * *", "minute '60' is beyond the range 0-59"),
        ("* * * * 7", "day of week '7' is beyond the range 0-6"),
        ("* * * foo *", "failed to parse int from foo: month"),
        ("*/0 * * * *", "zero step"),
        ("a-b-c * * * *", "failed to parse minute"),
    ],
)
def test_bad_schedules_say_what_is_wrong(schedule: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse(schedule)


def test_times_between_excludes_the_start_and_includes_the_end() -> None:
    times = list(
        times_between(parse("*/10 * * * *"), at("2026-01-01T00:00:00"), at("2026-01-01T00:30:00"))
    )
    assert times == [
        at("2026-01-01T00:10:00"),
        at("2026-01-01T00:20:00"),
        at("2026-01-01T00:30:00"),
    ]


def test_most_recent_counts_missed_times_and_handles_every() -> None:
    latest, count = most_recent(
        parse("@every 90s"), at("2026-01-01T00:00:00"), at("2026-01-01T00:05:00")
    )
    assert (latest, count) == (at("2026-01-01T00:04:30"), 3)
    latest, count = most_recent(
        parse("0 * * * *"), at("2025-01-01T00:00:00"), at("2026-01-01T00:00:00")
    )
    # Only the last week is searched.
    assert latest == at("2026-01-01T00:00:00")
    assert count == 7 * 24
    assert most_recent(
        parse("0 0 1 1 *"),
        at("2026-01-02T00:00:00"),
        at("2026-01-02T00:00:00") + timedelta(hours=1),
    ) == (None, 0)


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        ("*/5 * * * *", "2026-03-02T10:07:30", "2026-03-02T10:10:00"),
        ("*/5 * * * *", "2026-03-02T10:10:00", "2026-03-02T10:15:00"),
        ("0 0 1 1 *", "2026-03-02T10:07:30", "2027-01-01T00:00:00"),
        ("30 4 * * MON", "2026-03-02T10:07:30", "2026-03-09T04:30:00"),
        ("@every 45s", "2026-03-02T10:07:30", "2026-03-02T10:08:15"),
    ],
)
def test_next_time(schedule: str, after: str, expected: str) -> None:
    assert next_time(parse(schedule), at(after)) == at(expected)


def test_an_impossible_date_has_no_next_time() -> None:
    assert next_time(parse("0 0 30 2 *"), at("2026-01-01T00:00:00")) is None
