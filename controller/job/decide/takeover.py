"""A Job another controller ran before vcjob's (Volcano's, on a switch): the times vcjob's own
status fields would have recorded, read back from what that controller left.

vcjob records `startTime` (the run clock) and `attempts` from the Job's first round; a Job taken
over mid-life has neither, and the round of the takeover is not when it started. Volcano's status
keeps one condition per phase with the time it was last entered, and its pods keep their own
creation and start times: the earliest of those is the best record there is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from controller.job.decide import podview
from controller.job.decide.status import parse_time
from shared.models import JobPhase
from shared.wire import pod_status


def inherited(recorded_attempts: Sequence[Mapping[str, Any]], read_phase: JobPhase | None) -> bool:
    """Whether the Job has a phase but none of the attempts vcjob writes in its first round."""
    return read_phase is not None and not recorded_attempts


def _earliest(times: Iterable[datetime | None]) -> datetime | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


def first_run(
    conditions: Sequence[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> datetime | None:
    """When the Job ran, as far as the record goes: its Running condition, or the start of a pod
    of it that runs or ran (None: nothing says it ever ran)."""
    running_since = (
        parse_time(c.get("lastTransitionTime"))
        for c in conditions
        if c.get("status") == JobPhase.RUNNING.value
    )
    pods_started = (
        parse_time(pod_status(pod).get("startTime"))
        for pod in pods
        if podview.phase(pod) != "Pending"
    )
    return _earliest([*running_since, *pods_started])


def attempt_start(
    job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], retry_count: int, now: datetime
) -> datetime:
    """When the Job's current attempt began: with no restart yet, when the Job was created;
    after restarts, when the oldest of its pods was (the pods of earlier attempts are gone)."""
    if retry_count == 0:
        created = parse_time(podview.creation_timestamp(job))
    else:
        created = _earliest(parse_time(podview.creation_timestamp(pod)) for pod in pods)
    return min(created, now) if created is not None else now
