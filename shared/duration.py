"""Go-style durations (`30s`, `5m`, `1h30m`, `250ms`) as used by policy timeouts."""

from __future__ import annotations

import re
from datetime import timedelta

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> timedelta:
    """Parse like Go's time.ParseDuration; raises ValueError naming the problem."""
    if not isinstance(text, str) or text == "":
        raise ValueError("a duration such as 30s, 5m or 1h30m is required")
    body = text
    sign = 1.0
    if body[0] in "+-":
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if body == "0":
        return timedelta(0)
    pos, seconds = 0, 0.0
    while pos < len(body):
        match = _PART.match(body, pos)
        if match is None:
            raise ValueError(
                f'invalid duration "{text}": use a number with a unit (ns, us, ms, s, m, h)'
            )
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos == 0:
        raise ValueError(f'invalid duration "{text}"')
    return timedelta(seconds=sign * seconds)


def format_duration(delta: timedelta) -> str:
    """Render like Go's Duration.String() at second precision: `1h2m3s`, `45s`, `0s`."""
    total = int(delta.total_seconds())
    sign = "-" if total < 0 else ""
    total = abs(total)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"
