"""`spec.activeDeadlineSeconds`: the run clock and when the deadline passes.

The clock starts the first time the job runs (`status.startTime`) and counts only the time the
job is not suspended: every suspension adds its length to `status.suspendedSeconds` when it
ends, and `status.suspendedSince` marks one in progress. Restarts do not reset it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from controller.job.decide.status import parse_time, rfc3339


@dataclass(frozen=True)
class RunClock:
    start: datetime | None = None
    suspended_seconds: int = 0
    suspended_since: datetime | None = None

    @staticmethod
    def from_status(status: dict[str, Any]) -> RunClock:
        return RunClock(
            parse_time(status.get("startTime")),
            int(status.get("suspendedSeconds") or 0),
            parse_time(status.get("suspendedSince")),
        )

    def to_status(self) -> dict[str, Any]:
        """The status fields of the clock; None values are removed from the status."""
        return {
            "startTime": rfc3339(self.start) if self.start else None,
            "suspendedSeconds": self.suspended_seconds if self.start else None,
            "suspendedSince": rfc3339(self.suspended_since) if self.suspended_since else None,
        }


def advance(
    clock: RunClock,
    *,
    running: bool,
    suspended: bool,
    now: datetime,
    ran_since: datetime | None = None,
) -> RunClock:
    """The clock after this reconcile: started on the first Running (or when the Job had first
    run, `ran_since`, for a Job another controller ran before), paused while suspended, the
    length of a suspension added when it ends."""
    if clock.start is None and ran_since is not None:
        return replace(clock, start=min(ran_since, now))
    if clock.start is None:
        return replace(clock, start=now) if running and not suspended else clock
    if suspended and clock.suspended_since is None:
        return replace(clock, suspended_since=now)
    if not suspended and clock.suspended_since is not None:
        paused = max(0, int((now - clock.suspended_since).total_seconds()))
        return RunClock(clock.start, clock.suspended_seconds + paused, None)
    return clock


def active_time(clock: RunClock, now: datetime) -> timedelta:
    """How long the job has run, suspensions excluded (zero before it first ran)."""
    if clock.start is None:
        return timedelta(0)
    paused = timedelta(seconds=clock.suspended_seconds)
    if clock.suspended_since is not None:
        paused += max(now - clock.suspended_since, timedelta(0))
    return max(now - clock.start - paused, timedelta(0))


@dataclass(frozen=True)
class DeadlineCheck:
    exceeded: bool
    # Time until the deadline passes while the job keeps running (None: no deadline to watch).
    remaining: timedelta | None


def check(
    deadline_seconds: int | None, clock: RunClock, *, suspended: bool, now: datetime
) -> DeadlineCheck:
    """Whether the deadline passed; a suspended job or one that never ran has nothing due."""
    if deadline_seconds is None or clock.start is None:
        return DeadlineCheck(False, None)
    left = timedelta(seconds=deadline_seconds) - active_time(clock, now)
    if left <= timedelta(0):
        return DeadlineCheck(not suspended, None)
    return DeadlineCheck(False, None if suspended else left)
