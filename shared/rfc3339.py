"""Times as Kubernetes writes them (metav1.Time): RFC 3339, second precision, UTC, `Z`.

The one reader and writer of these stamps for every process (status times, Events, CronJob and
JobFlow histories, `vcjob job list`). Lease renewals (metav1.MicroTime) keep their microseconds
and are not read here.
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(moment: datetime) -> str:
    """`2026-01-01T12:00:00Z`; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: object) -> datetime | None:
    """The UTC moment of a stamp (`Z` or an offset; a stamp without one is taken as UTC); None
    for an absent or empty value or one that is not a time."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
