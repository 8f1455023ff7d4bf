"""CronJob schedules as kube reads them (robfig/cron's standard parser): five fields — minute,
hour, day of month, month, day of week — or an `@`-descriptor, and the times they name.

Day of month and day of week combine as in cron: when both are restricted, a day matching
either is scheduled. Times are UTC (`spec.timeZone` is not applied).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.duration import parse_duration

DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, lowest, highest, names) of each field, in order.
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
_TERM = re.compile(r"^(?P<range>\*|\?|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/(?P<step>[0-9]+))?$")
#: How far back a schedule is searched for missed times: kube gives up after 100 misses too.
MAX_LOOKBACK = timedelta(days=7)


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool
    every: timedelta | None = None

    def matches(self, moment: datetime) -> bool:
        if self.every is not None:
            return False
        if moment.minute not in self.minutes or moment.hour not in self.hours:
            return False
        return self.matches_day(moment)

    def matches_day(self, moment: datetime) -> bool:
        if moment.month not in self.months:
            return False
        day_ok = moment.day in self.days
        weekday_ok = (moment.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return day_ok and weekday_ok
        return day_ok or weekday_ok


def _value(text: str, field: str, names: dict[str, int]) -> int:
    if text in names:
        return names[text]
    if not text.isdigit():
        raise ValueError(f"failed to parse int from {text}: {field}")
    return int(text)


def _parse_field(text: str, field: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    values: set[int] = set()
    for term in text.lower().split(","):
        match = _TERM.match(term)
        if match is None:
            raise ValueError(f"failed to parse {field} {term!r}")
        part, step = match["range"], int(match["step"] or 1)
        if part in ("*", "?"):
            start, end = low, high
        elif "-" in part:
            first, last = part.split("-", 1)
            start, end = _value(first, field, names), _value(last, field, names)
        else:
            start = _value(part, field, names)
            end = high if match["step"] else start
        if start < low or end > high or start > end:
            raise ValueError(f"{field} {term!r} is beyond the range {low}-{high}")
        if step == 0:
            raise ValueError(f"{field} {term!r} has a zero step")
        values.update(range(start, end + 1, step))
    return values


def parse(schedule: str) -> Schedule:
    """The schedule, or ValueError saying what is wrong with it."""
    text = schedule.strip()
    if text.startswith("@every "):
        every = parse_duration(text.removeprefix("@every ").strip())
        if every <= timedelta(0):
            raise ValueError(f"@every needs a positive duration: {schedule}")
        empty: frozenset[int] = frozenset()
        return Schedule(empty, empty, empty, empty, empty, True, True, every)
    text = DESCRIPTORS.get(text, text)
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(f"expected exactly 5 fields, found {len(fields)}: {schedule}")
    minutes, hours, days, months, weekdays = (
        frozenset(_parse_field(f, name, low, high, names))
        for f, (name, low, high, names) in zip(fields, _FIELDS, strict=True)
    )
    return Schedule(
        minutes,
        hours,
        days,
        months,
        weekdays,
        any_day=fields[2] in ("*", "?"),
        any_weekday=fields[4] in ("*", "?"),
    )


def times_between(schedule: Schedule, after: datetime, until: datetime) -> Iterator[datetime]:
    """Every scheduled time in (after, until], oldest first, at most MAX_LOOKBACK back."""
    after = max(after, until - MAX_LOOKBACK)
    if schedule.every is not None:
        moment = after + schedule.every
        while moment <= until:
            yield moment
            moment += schedule.every
        return
    moment = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while moment <= until:
        if schedule.matches(moment):
            yield moment
        moment += timedelta(minutes=1)


def most_recent(
    schedule: Schedule, after: datetime, until: datetime
) -> tuple[datetime | None, int]:
    """The latest scheduled time in (after, until] and how many there were."""
    latest: datetime | None = None
    count = 0
    for moment in times_between(schedule, after, until):
        latest = moment
        count += 1
    return latest, count


def next_time(schedule: Schedule, after: datetime) -> datetime | None:
    """The first scheduled time after `after`, within about a year (else None)."""
    if schedule.every is not None:
        return after + schedule.every
    day = after.replace(hour=0, minute=0, second=0, microsecond=0)
    for _ in range(367):
        if schedule.matches_day(day):
            for hour in sorted(schedule.hours):
                for minute in sorted(schedule.minutes):
                    moment = day.replace(hour=hour, minute=minute)
                    if moment > after:
                        return moment
        day += timedelta(days=1)
    return None
