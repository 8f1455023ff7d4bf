"""Whether the job controller reconciles a job again at once after applying its plan."""

from __future__ import annotations

from typing import Any

from controller.job.decide.model import Plan


def follow_up_needed(job: dict[str, Any], plan: Plan, objects_written: int) -> bool:
    """Whether the job is reconciled again at once after its plan was applied.

    Yes after any write of an object (its watch echo is not reconciled) or of a new phase (the
    next reconcile carries out its effects) — except for a new job's first plan that created
    everything it meant to and wrote Pending: the cache holds each created object as the API
    returned it and nothing is left to carry out, so another reconcile would plan nothing."""
    before = ((job.get("status") or {}).get("state") or {}).get("phase")
    after = ((plan.status or {}).get("state") or {}).get("phase")
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
    first_plan_done = (
        before is None
        and after == "Pending"
        and only_creates
        and objects_written == len(plan.create)
    )
    return not first_plan_done
