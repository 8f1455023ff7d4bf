"""ttlSecondsAfterFinished: when a finished Job is deleted. Pure: the clock comes in."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class TtlOutcome:
    delete: bool
    # How long until the TTL expires (None once it has).
    wait: timedelta | None = None


def ttl_outcome(
    ttl_seconds: int | None, finished_at: datetime | None, now: datetime
) -> TtlOutcome | None:
    """None when the Job has no TTL or no finish time (its terminal phase's
    lastTransitionTime, read from the status, so it survives a controller restart)."""
    if ttl_seconds is None or finished_at is None:
        return None
    expires = finished_at + timedelta(seconds=ttl_seconds)
    if expires <= now:
        return TtlOutcome(delete=True)
    return TtlOutcome(delete=False, wait=expires - now)
