"""Whether the job controller reconciles a job again at once after applying its plan."""

from __future__ import annotations

from typing import Any

from controller.job.decide.model import Plan
from shared.wire import phase_of, state_phase


def follow_up_needed(job: dict[str, Any], plan: Plan, objects_written: int) -> bool:
    """Whether the job is reconciled again at once after its plan was applied.

    Yes after any write of an object (its watch echo is not reconciled) or of a new phase (the
    next reconcile carries out its effects) — except for a plan that only created objects, all
    of them, and changed no phase other than a new job's first Pending: the cache holds each
    created object as the API returned it, the status written already counts the created pods,
    and nothing is left to carry out, so another reconcile would plan nothing."""
    before = phase_of(job)
    after = state_phase(plan.status)
    phase_changed = plan.status is not None and after != before
    if not (objects_written > 0 or phase_changed):
        return False
    only_creates = not (
        plan.annotate_out_of_sync
        or plan.delete
        or plan.update
        or plan.job_spec_patch
        or plan.delete_commands
        or plan.delete_job
    )
    all_created = only_creates and objects_written == len(plan.create)
    first_phase = before == "" and after == "Pending"
    return not (all_created and (first_phase or not phase_changed))
