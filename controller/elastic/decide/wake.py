"""When the job controller wakes the elastic autoscaler before its period."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.models import JobPhase
from shared.wire import spec_of


def wakes_autoscaler(previous_phase: str | None, phase: str | None, any_elastic: bool) -> bool:
    """A job that has just turned Pending (new, or back from Restarting) may need room now: the
    autoscaler should not leave it waiting for the next period. Only elastic tasks give room,
    so with none in the cluster (`any_elastic`) a round could change nothing and is not brought
    forward: a burst of ordinary jobs must not cost a listing of every Job per arrival."""
    return any_elastic and phase == JobPhase.PENDING and previous_phase != JobPhase.PENDING


def has_elastic_task(job: Mapping[str, Any]) -> bool:
    """Whether a Job dict has a task the autoscaler may resize (`minReplicas < maxReplicas`);
    a malformed task counts as not elastic (the round itself reports malformed jobs)."""
    tasks = spec_of(job).get("tasks")
    if not isinstance(tasks, list):
        return False
    for task in tasks:
        if not isinstance(task, Mapping):
            continue
        low, high = task.get("minReplicas"), task.get("maxReplicas")
        if isinstance(low, int) and isinstance(high, int) and low < high:
            return True
    return False
