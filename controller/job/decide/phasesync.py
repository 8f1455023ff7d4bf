"""The job's current phase carried out: a persisted restart (Restarting), a suspended job, the
pods drained (Aborting, Completing, Terminating), a finished job cleaned up, and the plugin
objects kept in line; Pending and Running are `activesync`'s.

The child objects and memory keys each plugin owns come from its descriptor (`shared.plugins`).
"""

from __future__ import annotations

import copy

from controller.job.decide import (
    activesync,
    attempts,
    draft,
    memory,
    podview,
    restarts,
    retrybudget,
    state,
    suspension,
)
from controller.job.decide import status as status_mod
from controller.job.decide import ttl as ttl_mod
from controller.job.decide.draft import FOLLOW_UP, Draft, JobRound
from controller.job.decide.model import EventRecord, ObjectRef
from controller.job.decide.plugins import owned_children, owned_memory_keys
from shared.models import JobPhase


def times(count: int) -> str:
    """`1 time`, `3 times`."""
    return f"{count} time" if count == 1 else f"{count} times"


def sync(r: JobRound, d: Draft) -> None:
    s = d.status
    # Finish deletions an earlier plan started (annotated, delete not yet applied).
    draft.kill(r, d, (p for p in r.pods if p.out_of_sync))
    if s.phase == JobPhase.RESTARTING and sync_restarting(r, d):
        return  # Pending or Failed is written before anything is created
    if s.phase in state.ACTIVE and r.suspended:
        sync_suspended(r, d)
    elif s.phase in state.ACTIVE:
        activesync.sync(r, d)
    elif s.phase in state.DRAINING:
        sync_draining(r, d)
    elif s.phase == JobPhase.ABORTED:
        draft.kill_unfinished(r, d)
        draft.delete_pod_group(r, d)
    if s.phase not in state.TERMINAL:
        sync_children(
            r, d, create=s.phase in (JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING)
        )
    if s.phase not in state.ACTIVE and s.phase != JobPhase.RESTARTING:
        d.timers = {}


def sync_restarting(r: JobRound, d: Draft) -> bool:
    """Carry out the persisted restart: delete the pods it replaces (and, for a full
    restart or a resume, the PodGroup), then write Pending once they are gone. True when
    the phase moved on."""
    s = d.status
    if state.retries_exhausted(s.retry_count, r.max_retry):
        # The last retry keeps finished pods (their logs); nothing else keeps running
        # under a Failed job (difference 4).
        draft.kill_unfinished(r, d)
        if draft.set_phase(
            r,
            d,
            JobPhase.FAILED,
            "MaxRetryExceeded",
            f"the job was restarted {times(s.retry_count)}, maxRetry is {r.max_retry}",
        ):
            draft.end_restart(d)
            return True
        return False
    record = s.restart
    if (
        record is not None
        and record.cause == retrybudget.Cause.INFRASTRUCTURE
        and retrybudget.infrastructure_exhausted(
            s.restart_counts.get("infrastructure", 0), r.retry_policy
        )
    ):
        draft.kill_unfinished(r, d)
        allowed = r.retry_policy.infrastructure_retries if r.retry_policy else 0
        if draft.set_phase(
            r,
            d,
            JobPhase.FAILED,
            "InfrastructureRetriesExceeded",
            f"the job was restarted {times(s.restart_counts.get('infrastructure', 0))} "
            f"because of the infrastructure, retryPolicy.infrastructureRetries is {allowed}",
        ):
            draft.end_restart(d)
            return True
        return False
    draft.kill(r, d, (p for p in r.pods if restarts.is_victim(record, p, s.version)))
    needs_new_group = record is None or record.needs_new_pod_group
    if needs_new_group:
        draft.delete_pod_group(r, d)
    group_gone = not needs_new_group or r.observed.pod_group is None
    pods_gone = all(draft.live(d, p) and not p.out_of_sync for p in r.pods)
    not_before = status_mod.parse_time(record.not_before if record else None)
    if group_gone and pods_gone and not_before is not None and r.now < not_before:
        d.requeue.append(not_before - r.now)  # the backoff before recreating
        return False
    if (
        group_gone
        and pods_gone
        and draft.set_phase(
            r, d, JobPhase.PENDING, "Restarted", "the restarted pods are being recreated"
        )
    ):
        draft.end_restart(d)
        s.attempts = attempts.start(s.attempts, status_mod.rfc3339(r.now))
        return True
    return False


def suspended_message(r: JobRound) -> str:
    return (
        r.kueue.waiting_message
        or "the job is suspended (spec.suspend is true): it has no pods until it is resumed"
    )


def sync_suspended(r: JobRound, d: Draft) -> None:
    """No pods while suspended: the unfinished ones are deleted (finished pods, the retry
    count and the version stay), the PodGroup too (the gang is admitted afresh on resume);
    the job waits in Pending with reason Suspended."""
    draft.kill_unfinished(r, d)
    draft.delete_pod_group(r, d)
    d.timers = {}
    message = suspended_message(r)
    s = d.status
    if (s.phase, s.reason, s.message) != (JobPhase.PENDING, suspension.STATE_REASON, message):
        draft.set_phase(r, d, JobPhase.PENDING, suspension.STATE_REASON, message)


def sync_draining(r: JobRound, d: Draft) -> None:
    s = d.status
    draft.kill_unfinished(r, d)
    if s.phase == JobPhase.ABORTING:
        draft.delete_pod_group(r, d)
    if not d.transitioned and state.draining_done(draft.tally(r, d).counts()):
        final = state.DRAINING[s.phase]
        draft.set_phase(r, d, final, s.reason or final.value, s.message or final.value)


def sync_children(r: JobRound, d: Draft, *, create: bool) -> None:
    """Plugin objects: created while the job can run, kept in line in every non-terminal
    phase (difference 13: the hosts ConfigMap follows replicas even while Pending)."""
    children = r.observed.children
    for plugin in draft.plugins(r, d):
        d.status.controlled[f"plugin-{plugin.name}"] = plugin.name
        for desired in plugin.objects():
            key = (str(desired.obj["kind"]), str(desired.obj["metadata"]["name"]))
            existing = children.get(key)
            if existing is None:
                if create:
                    d.plan.create.append(desired.obj)
                continue
            changed = {
                k: desired.obj.get(k)
                for k in desired.managed
                if existing.get(k) != desired.obj.get(k)
            }
            if changed:
                updated = copy.deepcopy(existing)
                updated.update(copy.deepcopy(changed))
                d.plan.update.append(updated)
        entries = memory.plugin_entries(d.memory)
        for memory_key in plugin.descriptor.memory_keys:
            entries.pop(memory_key, None)
        entries.update(plugin.remember())


def finish(r: JobRound, d: Draft) -> None:
    """Terminal phases: unfinished pods, the PodGroup and plugin objects go; the status stays
    (counters keep tracking the pods that remain)."""
    s = d.status
    draft.kill_unfinished(r, d)
    draft.delete_pod_group(r, d)
    owned_kinds, owned_names = owned_children(r.job.name)
    for (kind, name), child in sorted(r.observed.children.items()):
        if (
            kind in owned_kinds
            and name in owned_names
            and podview.controller_uid(child) == r.job.uid
        ):
            d.plan.delete.append(
                ObjectRef(
                    str(child.get("apiVersion") or "v1"),
                    kind,
                    r.job.namespace,
                    name,
                    podview.uid_of(child) or None,
                )
            )
    s.controlled = {k: v for k, v in s.controlled.items() if not k.startswith("plugin-")}
    plugin_memory = memory.plugin_entries(d.memory)
    for memory_key in owned_memory_keys():
        plugin_memory.pop(memory_key, None)
    ttl = r.job.spec.ttl_seconds_after_finished
    expiry = ttl_mod.ttl_outcome(ttl, status_mod.parse_time(s.last_transition), r.now)
    if expiry is not None:
        if expiry.delete:
            d.plan.delete_job = True
            d.plan.events.append(
                EventRecord(
                    "Normal",
                    "TTLExpired",
                    f"the job finished at {s.last_transition} and its "
                    f"ttlSecondsAfterFinished of {ttl}s passed; deleting it",
                )
            )
        elif expiry.wait is not None:
            d.requeue.append(expiry.wait)


def apply_kueue(r: JobRound, d: Draft) -> None:
    steps = r.kueue
    if steps.create_workload is not None:
        d.plan.create.append(steps.create_workload)
    if steps.set_suspend is not None:
        patch = d.plan.job_spec_patch or {}
        patch.setdefault("spec", {})["suspend"] = steps.set_suspend
        d.plan.job_spec_patch = patch
        # Our own write's echo does not wake the job: look again at once.
        d.requeue.append(FOLLOW_UP)
    d.plan.workload_status = steps.workload_status
    d.plan.adopt_workload = steps.adopt_workload
    if steps.requeue_after is not None:
        d.requeue.append(steps.requeue_after)
