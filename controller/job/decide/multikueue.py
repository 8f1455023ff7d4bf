"""A job Kueue's MultiKueue dispatches to a worker cluster (`spec.managedBy:
kueue.x-k8s.io/multikueue`), as the manager cluster's controller sees it.

MultiKueue copies the job to the worker cluster whose quota admits its Workload, and mirrors the
copy's whole status into this one. Here vcjob keeps only Kueue's side of the contract, as Kueue's
own integrations do for their jobs on a manager cluster: the job's Workload is created, the job is
suspended and resumed as Kueue decides (no pod is ever made here), and the Workload is finished
once the mirrored status says the job is. The job's status and children belong to MultiKueue.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from controller.job.decide import kueue, ttl
from controller.job.decide import status as status_mod
from controller.job.decide.model import Plan
from shared import labels
from shared.models import JobPhase
from shared.wire import job_state, phase_of, spec_of

MANAGED_BY: Final = labels.MANAGED_BY_MULTIKUEUE


def dispatched(job: Mapping[str, Any]) -> bool:
    """MultiKueue runs this job on a worker cluster: managedBy names it, and a LocalQueue is set."""
    spec = job.get("spec")
    managed_by = spec.get("managedBy") if isinstance(spec, Mapping) else None
    return managed_by == MANAGED_BY and kueue.queue_name(job) is not None


def mirrored_outcome(job: Mapping[str, Any]) -> bool | None:
    """What the mirrored status says: True Completed, False Failed or Terminated, None running."""
    phase = phase_of(job)
    if phase == JobPhase.COMPLETED.value:
        return True
    if phase in (JobPhase.FAILED.value, JobPhase.TERMINATED.value):
        return False
    return None


def plan_dispatched(
    job: Mapping[str, Any],
    workload: Mapping[str, Any] | None,
    *,
    priority_values: Mapping[str, int],
    now: datetime,
) -> Plan:
    """The manager's whole plan for a dispatched job: Kueue's steps and, once the mirrored
    status says it finished, its ttlSecondsAfterFinished. No pod runs here, so an eviction is
    carried out as soon as the job is suspended."""
    steps = _kueue_steps(job, workload, priority_values, now)
    plan = Plan()
    if steps.create_workload is not None:
        plan.create.append(steps.create_workload)
    if steps.set_suspend is not None:
        plan.job_spec_patch = {"spec": {"suspend": steps.set_suspend}}
    plan.workload_status = steps.workload_status
    if steps.set_suspend is True and steps.workload_status is None and workload is not None:
        state = kueue.read_workload(workload)
        if state.evicted and state.has_admission:
            # An eviction: with no pod to wait for, its admission is cleared in the same pass.
            # Left evicted with its quota for a while, MultiKueue would take the Workload a
            # worker reserves meanwhile for one evicted on the manager, and deactivate it there
            # for good.
            plan.workload_status = kueue.eviction_carried_out(workload, status_mod.rfc3339(now))
    _apply_ttl(job, plan, now)
    return plan


def _apply_ttl(job: Mapping[str, Any], plan: Plan, now: datetime) -> None:
    """A finished job's TTL runs from its terminal phase as mirrored from its worker (the copy
    there is gone by then: MultiKueue removes it once the Workload finished)."""
    if mirrored_outcome(job) is None:
        return
    state = job_state(job)
    ttl_seconds = spec_of(job).get("ttlSecondsAfterFinished")
    outcome = ttl.ttl_outcome(
        ttl_seconds if isinstance(ttl_seconds, int) else None,
        status_mod.parse_time(state.get("lastTransitionTime")),
        now,
    )
    if outcome is None:
        return
    plan.delete_job = outcome.delete
    plan.requeue_after = outcome.wait


def _kueue_steps(
    job: Mapping[str, Any],
    workload: Mapping[str, Any] | None,
    priority_values: Mapping[str, int],
    now: datetime,
) -> kueue.KueueSteps:
    state = job_state(job)
    return kueue.plan_kueue(
        job,
        workload,
        {},
        priority_values=priority_values,
        finished=mirrored_outcome(job),
        finish_message=f"the job is {state.get('phase')} on its worker cluster",
        pods_gone=True,
        now=status_mod.rfc3339(now),
    )


def writes_nothing(plan: Plan) -> bool:
    return not (
        plan.create or plan.job_spec_patch or plan.workload_status is not None or plan.delete_job
    )
