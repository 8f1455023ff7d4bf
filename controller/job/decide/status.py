"""The job status: counters, taskStatusCount, succeededIndexes, state, conditions, duration."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from controller.job.decide import podview
from controller.job.decide.state import ACTIVE, PodCounts
from shared import indexranges
from shared import rfc3339 as rfc3339_times
from shared.duration import format_duration
from shared.models import JobPhase

# Kubernetes' metav1.Time wire form, read and written in one place for every process.
rfc3339 = rfc3339_times.format_time
parse_time = rfc3339_times.parse_time


@dataclass
class PodTally:
    """Counts of the pods that exist (after this plan's deletes and creates)."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    by_task: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, task: str | None, pod_phase: str, *, terminating: bool) -> None:
        if terminating:
            self.terminating += 1
            return
        if pod_phase == podview.PENDING:
            self.pending += 1
        elif pod_phase == podview.RUNNING:
            self.running += 1
        elif pod_phase == podview.SUCCEEDED:
            self.succeeded += 1
        elif pod_phase == podview.FAILED:
            self.failed += 1
        else:
            self.unknown += 1
            pod_phase = podview.UNKNOWN
        if task is not None:
            phases = self.by_task.setdefault(task, {})
            phases[pod_phase] = phases.get(pod_phase, 0) + 1

    def counts(self, *, extra_succeeded: int = 0) -> PodCounts:
        return PodCounts(
            pending=self.pending,
            running=self.running,
            succeeded=self.succeeded + extra_succeeded,
            failed=self.failed,
            terminating=self.terminating,
            unknown=self.unknown,
        )

    def task_status_count(self) -> dict[str, Any]:
        return {
            task: {"phase": dict(sorted(phases.items()))}
            for task, phases in sorted(self.by_task.items())
            if phases
        }


def render_succeeded_indexes(indexes: Mapping[str, Iterable[int]]) -> dict[str, str]:
    return {task: indexranges.render(idx) for task, idx in sorted(indexes.items()) if idx}


def parse_succeeded_indexes(raw: Mapping[str, Any] | None) -> dict[str, set[int]]:
    parsed: dict[str, set[int]] = {}
    for task, text in (raw or {}).items():
        try:
            parsed[str(task)] = indexranges.expand(str(text))
        except indexranges.IndexRangeError:
            parsed[str(task)] = set()
    return parsed


def with_condition(
    conditions: Sequence[Mapping[str, Any]] | None, phase: str, when: str
) -> list[dict[str, Any]]:
    """Volcano's format: one entry per phase, most recent last. Entering a phase again moves its
    entry to the end with the new time, so the list stays bounded however often a job restarts."""
    out = [dict(c) for c in conditions or [] if c.get("status") != phase]
    out.append({"status": phase, "lastTransitionTime": when})
    return out


def running_duration(job: Mapping[str, Any], now: datetime) -> str | None:
    """Time from creation to the latest phase change; only moves when the phase does, so a
    status is stable between transitions. Written only where Volcano writes it
    (`running_duration_written`)."""
    created = parse_time(podview.creation_timestamp(job))
    if created is None:
        return None
    return format_duration(max(now - created, timedelta(0)))


def running_duration_written(phase: JobPhase, duration: str | None) -> str | None:
    """runningDuration as Volcano's controller leaves it: set by its kills, none in Pending and
    Running, whose sync drops it (and a Job that has one there is rewritten by Volcano's
    controller the moment it takes over, moving its Running time)."""
    return None if phase in ACTIVE else duration


def unchanged(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    return dict(old or {}) == dict(new)
