"""Cron schedules as Volcano's CronJob reads them (robfig/cron `ParseStandard`).

Five fields (minute hour day-of-month month day-of-week) or one of the descriptors `@yearly`,
`@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly` and `@every <duration>`.
Slots are computed in an IANA time zone; `next_after` takes and returns aware datetimes.

Daylight saving time: a slot whose wall-clock time does not exist (spring forward) runs once, at
the first instant after the gap; a wall-clock time that happens twice (fall back) runs once, at
its first occurrence, unless the hour field is `*` (then every real hour runs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, croniter

from shared.duration import parse_duration

DESCRIPTORS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
EVERY: Final = "@every "
# One part of an IANA name, as Go's time.LoadLocation accepts it.
_ZONE_PART: Final = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
# robfig only knows these characters: croniter's extensions (L, W, #, seconds) are refused.
_FIELD: Final = re.compile(r"^[A-Za-z0-9*?,/\-]+$")
_WORD: Final = re.compile(r"[A-Za-z]+")
# The only words robfig knows: month and day-of-week names.
_NAMES: Final = frozenset({
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT",
})  # fmt: skip


@dataclass(frozen=True)
class FieldBounds:
    """One field of a five-field expression: its name, range and the names it knows."""

    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] stands for low + i


# robfig/cron's bounds, which Kubernetes' and Volcano's CronJob validation both use: day-of-week
# is 0-6 (7 is refused), months and weekdays also by name.
FIELD_BOUNDS: Final = (
    FieldBounds("minute", 0, 59),
    FieldBounds("hour", 0, 23),
    FieldBounds("day of month", 1, 31),
    FieldBounds("month", 1, 12, ("JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                 "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")),
    FieldBounds("day of week", 0, 6, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")),
)  # fmt: skip


def _number(text: str, bounds: FieldBounds) -> int:
    upper = text.upper()
    if upper in bounds.names:
        return bounds.low + bounds.names.index(upper)
    if not text.isdigit():
        raise ScheduleError(f"failed to parse int from {text}")
    return int(text)


def _range_problem(expr: str, bounds: FieldBounds) -> str | None:
    """robfig's getRange checks on one comma-separated part: `*`, `N` or `N-M`, with `/step`."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    try:
        if low_and_high[0] in ("*", "?"):
            start, end = bounds.low, bounds.high
        elif len(low_and_high) > 2:
            return f"too many hyphens: {expr}"
        else:
            start = _number(low_and_high[0], bounds)
            end = _number(low_and_high[-1], bounds)
        if len(range_and_step) > 2:
            return f"too many slashes: {expr}"
        step = 1
        if len(range_and_step) == 2:
            if not range_and_step[1].isdigit():
                raise ScheduleError(f"failed to parse int from {range_and_step[1]}")
            step = int(range_and_step[1])
            if len(low_and_high) == 1:
                end = bounds.high  # "N/step" means "N-max/step"
    except ScheduleError as exc:
        return f"{exc}: {expr}"
    if start < bounds.low:
        return f"beginning of range ({start}) below minimum ({bounds.low}): {expr}"
    if end > bounds.high:
        return f"end of range ({end}) above maximum ({bounds.high}): {expr}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {expr}"
    if step == 0:
        return f"step of range should be a positive number: {expr}"
    return None


def field_range_problems(expression: str) -> list[str]:
    """Each field of a five-field expression checked against its range as Kubernetes' CronJob
    validation (robfig/cron) does: `61 * * * *`, `5-1 * * * *`, `* * * * 7` and `*/0 * * * *`
    are refused. One problem per field at most, named after the field."""
    fields = expression.split()
    if len(fields) != len(FIELD_BOUNDS):
        return [f"expected exactly {len(FIELD_BOUNDS)} fields, found {len(fields)}: {expression}"]
    problems: list[str] = []
    for field, bounds in zip(fields, FIELD_BOUNDS, strict=True):
        # Empty parts are skipped, as robfig splits with strings.FieldsFunc.
        for part in filter(None, field.split(",")):
            if (problem := _range_problem(part, bounds)) is not None:
                problems.append(f"{bounds.name}: {problem}")
                break
    return problems


class ScheduleError(ValueError):
    """The schedule cannot be parsed, or no time ever matches it."""


@dataclass(frozen=True)
class CronSchedule:
    """A parsed schedule: a five-field expression, or a constant delay (`@every`)."""

    text: str
    expression: str | None = None
    every: timedelta | None = None

    def next_after(self, after: datetime, zone: tzinfo) -> datetime:
        """The first slot strictly after `after` (aware), in `zone`, returned in UTC."""
        if self.every is not None:
            # robfig's ConstantDelaySchedule: the delay after `after`, sub-seconds dropped.
            start = after.astimezone(UTC).replace(microsecond=0)
            return start + self.every
        expression = self.expression or ""
        found = _next(expression, after.astimezone(zone))
        hour_field = expression.split()[1]
        # The repeated hour of a fall-back: its wall-clock slots already ran at their first
        # occurrence (fold 0), so the second one (fold 1) is skipped.
        while hour_field != "*" and found.fold == 1 and _is_repeat(found):
            found = _next(expression, found)
        return found.astimezone(UTC)


def _next(expression: str, start: datetime) -> datetime:
    try:
        result = croniter(expression, start).get_next(datetime)
    except CroniterBadDateError as exc:
        raise ScheduleError("no time ever matches the schedule") from exc
    if not isinstance(result, datetime):
        raise ScheduleError("the schedule produced no time")
    return result


def _is_repeat(moment: datetime) -> bool:
    """The wall-clock time also happened an hour-ish earlier (fold 0 differs in offset)."""
    first = moment.replace(fold=0)
    return first.utcoffset() != moment.utcoffset()


def parse_schedule(text: str) -> CronSchedule:
    """Parse a schedule or raise ScheduleError with a reason."""
    stripped = text.strip()
    if not stripped:
        raise ScheduleError("the schedule is empty")
    if stripped.startswith(EVERY):
        try:
            delay = parse_duration(stripped[len(EVERY) :].strip())
        except ValueError as exc:
            raise ScheduleError(f"@every: {exc}") from exc
        # robfig rounds the delay down to whole seconds, with one second at least.
        seconds = max(1, int(delay.total_seconds()))
        return CronSchedule(text, every=timedelta(seconds=seconds))
    if stripped.startswith("@"):
        expression = DESCRIPTORS.get(stripped.lower())
        if expression is None:
            raise ScheduleError(f"unknown descriptor {stripped!r}")
    else:
        expression = stripped
    fields = expression.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {stripped!r}")
    for field in fields:
        if not _FIELD.match(field):
            raise ScheduleError(f"unsupported characters in field {field!r}")
        for word in _WORD.findall(field):
            if word.upper() not in _NAMES:
                raise ScheduleError(f"unknown name {word!r} in field {field!r}")
    if problems := field_range_problems(expression):
        raise ScheduleError("; ".join(problems))
    expression = " ".join(",".join(filter(None, f.split(","))).replace("?", "*") for f in fields)
    try:
        croniter(expression, datetime(2000, 1, 1, tzinfo=UTC))
    except (CroniterBadCronError, ValueError, KeyError) as exc:
        raise ScheduleError(str(exc) or "invalid cron expression") from exc
    schedule = CronSchedule(text, expression=expression)
    # An impossible date (February 31st) parses but never fires.
    schedule.next_after(datetime(2000, 1, 1, tzinfo=UTC), UTC)
    return schedule


def zone_name_problems(name: str) -> list[str]:
    """Why `name` is not an acceptable IANA time zone name (empty: it is fine)."""
    if name == "":
        return ["timeZone must be nil or non-empty string, got empty string"]
    problems = [
        "unknown timeZone"
        for part in name.split("/")
        if part in (".", "..") or part.startswith("-") or not _ZONE_PART.match(part)
    ]
    if problems:
        return problems
    if name.lower() == "local":
        return ["timeZone can't be Local, and must be defined in https://www.iana.org/time-zones"]
    try:
        load_zone(name)
    except ScheduleError:
        return ["invalid timeZone"]
    return []


def load_zone(name: str) -> ZoneInfo:
    """The IANA zone `name`, or ScheduleError."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ScheduleError(f"unknown time zone {name!r}") from exc
