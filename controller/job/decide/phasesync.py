"""The job's current phase carried out: a persisted restart (Restarting), a suspended job, the
pods drained (Aborting, Completing, Terminating), a finished job cleaned up, and the plugin
objects kept in line; Pending and Running are `activesync`'s.

The child objects and memory keys each plugin owns come from its descriptor (`shared.plugins`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping

from controller.job.decide import (
    activesync,
    attempts,
    podview,
    restarts,
    retrybudget,
    state,
    steps,
    suspension,
)
from controller.job.decide import status as status_mod
from controller.job.decide import ttl as ttl_mod
from controller.job.decide.model import ObjectRef
from controller.job.decide.plugins import JobPlugin, owned_children, owned_memory_keys
from controller.job.decide.steps import FOLLOW_UP, Draft, Effects, JobRound
from shared.models import JobPhase
from shared.wire import WireObject


def times(count: int) -> str:
    """`1 time`, `3 times`."""
    return f"{count} time" if count == 1 else f"{count} times"


def sync(seen: JobRound, draft: Draft) -> Draft:
    # Finish deletions an earlier plan started (annotated, delete not yet applied).
    draft = steps.kill(seen, draft, (p for p in seen.pods if p.out_of_sync))
    phase = draft.status.phase
    if phase == JobPhase.RESTARTING:
        draft, moved = sync_restarting(seen, draft)
        if moved:
            return draft  # Pending or Failed is written before anything is created
    if phase in state.ACTIVE and seen.suspended:
        draft = sync_suspended(seen, draft)
    elif phase in state.ACTIVE:
        draft = activesync.sync(seen, draft)
    elif phase in state.DRAINING:
        draft = sync_draining(seen, draft)
    elif phase == JobPhase.ABORTED:
        draft = steps.delete_pod_group(seen, steps.kill_unfinished(seen, draft))
    phase = draft.status.phase
    if phase not in state.TERMINAL:
        creating = phase in (JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING)
        draft = sync_children(seen, draft, create=creating)
    if phase not in state.ACTIVE and phase != JobPhase.RESTARTING:
        draft = draft._replace(timers={})
    return draft


def sync_restarting(seen: JobRound, draft: Draft) -> tuple[Draft, bool]:
    """Carry out the persisted restart: delete the pods it replaces (and, for a full
    restart or a resume, the PodGroup), then write Pending once they are gone. True when
    the phase moved on."""
    s = draft.status
    if state.retries_exhausted(s.retry_count, seen.max_retry):
        # The last retry keeps finished pods (their logs); nothing else keeps running
        # under a Failed job (difference 4).
        return fail(
            seen,
            steps.kill_unfinished(seen, draft),
            "MaxRetryExceeded",
            f"the job was restarted {times(s.retry_count)}, maxRetry is {seen.max_retry}",
        )
    record = s.restart
    if (
        record is not None
        and record.cause == retrybudget.Cause.INFRASTRUCTURE
        and retrybudget.infrastructure_exhausted(
            s.restart_counts.get("infrastructure", 0), seen.retry_policy
        )
    ):
        allowed = seen.retry_policy.infrastructure_retries if seen.retry_policy else 0
        return fail(
            seen,
            steps.kill_unfinished(seen, draft),
            "InfrastructureRetriesExceeded",
            f"the job was restarted {times(s.restart_counts.get('infrastructure', 0))} "
            f"because of the infrastructure, retryPolicy.infrastructureRetries is {allowed}",
        )
    draft = steps.kill(
        seen, draft, (p for p in seen.pods if restarts.is_victim(record, p, s.version))
    )
    needs_new_group = record is None or record.needs_new_pod_group
    if needs_new_group:
        draft = steps.delete_pod_group(seen, draft)
    group_gone = not needs_new_group or seen.observed.pod_group is None
    pods_gone = all(steps.live(draft, p) and not p.out_of_sync for p in seen.pods)
    if not (group_gone and pods_gone):
        return draft, False
    not_before = status_mod.parse_time(record.not_before if record else None)
    if not_before is not None and seen.now < not_before:
        return steps.requeue(draft, not_before - seen.now), False  # the backoff before recreating
    draft, moved = steps.set_phase(
        seen, draft, JobPhase.PENDING, "Restarted", "the restarted pods are being recreated"
    )
    if not moved:
        return draft, False
    draft = steps.end_restart(draft)
    started = attempts.start(draft.status.attempts, status_mod.rfc3339(seen.now))
    return draft._replace(status=draft.status._replace(attempts=tuple(started))), True


def fail(seen: JobRound, draft: Draft, reason: str, message: str) -> tuple[Draft, bool]:
    """A restart that may not happen: the job fails instead (True when the phase moved)."""
    draft, moved = steps.set_phase(seen, draft, JobPhase.FAILED, reason, message)
    return (steps.end_restart(draft) if moved else draft), moved


def suspended_message(seen: JobRound) -> str:
    return (
        seen.kueue.waiting_message
        or "the job is suspended (spec.suspend is true): it has no pods until it is resumed"
    )


def sync_suspended(seen: JobRound, draft: Draft) -> Draft:
    """No pods while suspended: the unfinished ones are deleted (finished pods, the retry
    count and the version stay), the PodGroup too (the gang is admitted afresh on resume);
    the job waits in Pending with reason Suspended."""
    draft = steps.delete_pod_group(seen, steps.kill_unfinished(seen, draft))
    draft = draft._replace(timers={})
    message = suspended_message(seen)
    s = draft.status
    if (s.phase, s.reason, s.message) != (JobPhase.PENDING, suspension.STATE_REASON, message):
        draft, _ = steps.set_phase(seen, draft, JobPhase.PENDING, suspension.STATE_REASON, message)
    return draft


def sync_draining(seen: JobRound, draft: Draft) -> Draft:
    s = draft.status
    draft = steps.kill_unfinished(seen, draft)
    if s.phase == JobPhase.ABORTING:
        draft = steps.delete_pod_group(seen, draft)
    if not draft.transitioned and state.draining_done(steps.tally(seen, draft).counts()):
        final = state.DRAINING[s.phase]
        draft, _ = steps.set_phase(
            seen, draft, final, s.reason or final.value, s.message or final.value
        )
    return draft


def sync_children(seen: JobRound, draft: Draft, *, create: bool) -> Draft:
    """Plugin objects: created while the job can run, kept in line in every non-terminal
    phase (difference 13: the hosts ConfigMap follows replicas even while Pending)."""
    plugins = seen.plugins
    effects = steps.unknown_plugins(seen) + plugin_objects(
        plugins, seen.observed.children, create=create
    )
    draft = steps.add(draft, effects)
    if not plugins:
        return draft
    owned = {f"plugin-{plugin.name}": plugin.name for plugin in plugins}
    if any(draft.status.controlled.get(k) != v for k, v in owned.items()):
        controlled = {**draft.status.controlled, **owned}
        draft = draft._replace(status=draft.status._replace(controlled=controlled))
    dropped = [key for plugin in plugins for key in plugin.descriptor.memory_keys]
    remembered: dict[str, object] = {}
    for plugin in plugins:
        remembered.update(plugin.remember())
    return steps.remember(draft, remembered, dropped)


def plugin_objects(
    plugins: Iterable[JobPlugin],
    children: Mapping[tuple[str, str], WireObject],
    *,
    create: bool,
) -> Effects:
    """The plugins' objects to create (when `create`) and those whose managed fields drifted
    from what the plugin wants."""
    made: list[WireObject] = []
    updated: list[WireObject] = []
    for plugin in plugins:
        for desired in plugin.objects():
            key = (str(desired.obj["kind"]), str(desired.obj["metadata"]["name"]))
            existing = children.get(key)
            if existing is None:
                if create:
                    made.append(desired.obj)
                continue
            changed = {
                k: desired.obj.get(k)
                for k in desired.managed
                if existing.get(k) != desired.obj.get(k)
            }
            if changed:
                replacement = copy.deepcopy(existing)
                replacement.update(copy.deepcopy(changed))
                updated.append(replacement)
    return Effects(create=tuple(made), update=tuple(updated))


def finish(seen: JobRound, draft: Draft) -> Draft:
    """Terminal phases: unfinished pods, the PodGroup and plugin objects go; the status stays
    (counters keep tracking the pods that remain)."""
    draft = steps.delete_pod_group(seen, steps.kill_unfinished(seen, draft))
    s = draft.status
    draft = steps.add(draft, owned_children_gone(seen) + ttl_expiry(seen, s.last_transition))
    controlled = {k: v for k, v in s.controlled.items() if not k.startswith("plugin-")}
    draft = draft._replace(status=s._replace(controlled=controlled))
    return steps.remember(draft, {}, owned_memory_keys())


def owned_children_gone(seen: JobRound) -> Effects:
    """The plugin objects this job owns, deleted (with their uid as precondition)."""
    owned_kinds, owned_names = owned_children(seen.job.name)
    return Effects(
        delete=tuple(
            ObjectRef(
                str(child.get("apiVersion") or "v1"),
                kind,
                seen.job.namespace,
                name,
                podview.uid_of(child) or None,
            )
            for (kind, name), child in sorted(seen.observed.children.items())
            if kind in owned_kinds
            and name in owned_names
            and podview.controller_uid(child) == seen.job.uid
        )
    )


def ttl_expiry(seen: JobRound, finished_at: str | None) -> Effects:
    """`ttlSecondsAfterFinished`: the job deleted once it passed, else a look when it will."""
    ttl = seen.job.spec.ttl_seconds_after_finished
    expiry = ttl_mod.ttl_outcome(ttl, status_mod.parse_time(finished_at), seen.now)
    if expiry is None:
        return steps.NOTHING
    if expiry.delete:
        gone = steps.event(
            "Normal",
            "TTLExpired",
            f"the job finished at {finished_at} and its "
            f"ttlSecondsAfterFinished of {ttl}s passed; deleting it",
        )
        return gone + Effects(delete_job=True)
    return steps.NOTHING if expiry.wait is None else Effects(requeue=(expiry.wait,))


def kueue_effects(seen: JobRound) -> Effects:
    """Kueue's steps for this job (`kueue.plan_kueue`): its Workload created, adopted or its
    status written, `spec.suspend` set."""
    kueue_steps = seen.kueue
    asked = (
        kueue_steps.create_workload,
        kueue_steps.requeue_after,
        kueue_steps.workload_status,
        kueue_steps.adopt_workload,
        kueue_steps.set_suspend,
    )
    if all(value is None for value in asked):
        return steps.NOTHING  # most jobs: not Kueue's
    effects = Effects(
        create=() if kueue_steps.create_workload is None else (kueue_steps.create_workload,),
        requeue=() if kueue_steps.requeue_after is None else (kueue_steps.requeue_after,),
        workload_status=kueue_steps.workload_status,
        adopt_workload=kueue_steps.adopt_workload,
    )
    if kueue_steps.set_suspend is not None:
        # Our own write's echo does not wake the job: look again at once.
        effects += Effects(spec=(("suspend", kueue_steps.set_suspend),), requeue=(FOLLOW_UP,))
    return effects
