"""A Pending or Running job kept in line with its spec: its volumes, its PodGroup (first), the
pods a scale-down removes, the missing pods once the gang gate opens, and the phase the pod
counts call for (`state.pending_outcome`, the success policy, `state.running_outcome`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from controller.job.decide import (
    attempts,
    dependson,
    gang,
    kueue,
    nativegang,
    podgroup,
    podview,
    scaling,
    state,
    steps,
    successpolicy,
    suspension,
    volumes,
)
from controller.job.decide.podgen import PodContext, build_pod
from controller.job.decide.steps import Draft, Effects, JobRound
from shared import labels
from shared.models import JobPhase
from shared.wire import WireObject

PVC_RECHECK = timedelta(seconds=10)


def sync(seen: JobRound, draft: Draft) -> Draft:
    s = draft.status
    if s.reason == suspension.STATE_REASON and s.phase == JobPhase.PENDING:
        draft, _ = steps.set_phase(
            seen,
            draft,
            JobPhase.PENDING,
            "Resumed",
            "spec.suspend is false: the pods of the same attempt are created again",
        )
    vplan = volumes.plan_volumes(
        seen.job,
        list(seen.raw_job.get("spec", {}).get("volumes") or []),
        seen.observed.children,
        seen.observed.missing_pvcs,
    )
    if vplan.controlled:
        controlled = {**draft.status.controlled, **vplan.controlled}
        draft = draft._replace(status=draft.status._replace(controlled=controlled))
    if vplan.missing:
        # difference 15: wait for the user's PVC, never terminate because of it.
        draft = draft._replace(missing_pvcs=tuple(vplan.missing))
        names = ", ".join(vplan.missing)
        if draft.status.phase == JobPhase.PENDING:
            draft, _ = steps.set_phase(
                seen,
                draft,
                JobPhase.PENDING,
                "PVCNotFound",
                f"PersistentVolumeClaim {names} not found; the job stays Pending until it exists",
            )
        return steps.requeue(draft, PVC_RECHECK)
    if draft.status.reason == "PVCNotFound":
        draft, _ = steps.set_phase(
            seen, draft, JobPhase.PENDING, "PVCFound", "every PersistentVolumeClaim exists"
        )
    volume_effects = Effects(
        create=tuple(vplan.creates),
        spec=() if vplan.spec_volumes is None else (("volumes", vplan.spec_volumes),),
    )
    pg, group_effects = sync_pod_group(seen, draft)
    warning = podgroup.pending_warning(seen.job, pg)
    pending = (
        steps.NOTHING if warning is None else steps.event("Warning", "PodGroupPending", warning)
    )
    native_groups, gang_effects = sync_native_gang(seen)
    draft = steps.add(draft, volume_effects + group_effects + pending + gang_effects)
    draft = scale_down(seen, draft)
    if gang.gate_open(seen.job.spec.scheduler_name, seen.settings.gang_schedulers, pg):
        draft = steps.add_pods(seen, draft, missing_pods(seen, draft, vplan.claims, native_groups))
    return transitions(seen, draft)


def sync_pod_group(seen: JobRound, draft: Draft) -> tuple[WireObject | None, Effects]:
    """The PodGroup to gate the pods on (None: none usable yet), created if missing, its spec
    brought in line on scale."""
    pg = steps.pod_group_usable(seen, draft)
    if pg is None:
        if seen.observed.pod_group is not None and not draft.pod_group_gone:
            return None, steps.NOTHING  # the deleted one is still in the cache: wait for it
        # The deleted group's uid stays remembered: a stale cache copy of it must never
        # open the gate for the new pods.
        built = podgroup.build_pod_group(seen.job, seen.observed.priority_values)
        return None, Effects(create=(built,))
    updated = podgroup.updated_pod_group(pg, seen.pod_group_spec)
    return pg, steps.NOTHING if updated is None else Effects(update=(updated,))


def sync_native_gang(seen: JobRound) -> tuple[dict[str, str], Effects]:
    """Kubernetes' own gang for a job kube-scheduler places: its Workload and PodGroups created
    before the first pod, the gangs' sizes kept in line on scale. Returns the PodGroup each
    task's pods join; none when the job has no native gang (and, once, says why not)."""
    if not nativegang.applies(seen.job, seen.settings.native_gang_schedulers):
        return {}, steps.NOTHING
    first_round = seen.observed.pod_group is None and not seen.pods
    if not seen.settings.native_gang_served:
        if not first_round:
            return {}, steps.NOTHING
        why = steps.event("Warning", nativegang.UNAVAILABLE_REASON, nativegang.UNAVAILABLE_MESSAGE)
        return {}, why
    groups = {podview.name_of(g): g for g in seen.observed.native_pod_groups}
    single = nativegang.name_of(seen.job)
    gangs = nativegang.task_gangs(seen.job)
    # The shape chosen when the gang was created stays for the job's life.
    composite = seen.observed.native_composite_pod_group is not None or (
        single not in groups and seen.settings.composite_gang_served and bool(gangs)
    )
    if composite:
        return sync_composite_gang(seen, groups, first_round)
    existing = groups.get(single)
    effects = steps.NOTHING
    if existing is None:
        known = seen.observed.priority_values
        effects = Effects(
            create=(
                nativegang.build_workload(seen.job, known),
                nativegang.build_pod_group(seen.job, known),
            )
        )
        if first_round:
            effects += report_partial(seen, [])
    elif (updated := nativegang.updated_pod_group(existing, seen.job)) is not None:
        effects = Effects(update=(updated,))
    return dict.fromkeys(seen.tasks, single), effects


def sync_composite_gang(
    seen: JobRound, groups: dict[str, WireObject], first_round: bool
) -> tuple[dict[str, str], Effects]:
    """The tasks' own gangs: a CompositePodGroup first, then a PodGroup per task, each resized
    with its task on scale. A task whose group exists keeps joining it."""
    known = seen.observed.priority_values
    gangs = nativegang.child_gangs(seen.job)
    effects = steps.NOTHING
    if seen.observed.native_composite_pod_group is None:
        effects = Effects(
            create=(
                nativegang.build_composite_workload(seen.job, gangs, known),
                nativegang.build_composite_pod_group(seen.job, gangs, known),
            )
        )
        if first_round:
            effects += report_partial(seen, gangs)
    for task_gang in gangs:
        existing = groups.get(task_gang.pod_group)
        if existing is None:
            built = nativegang.build_task_pod_group(seen.job, task_gang, known)
            effects += Effects(create=(built,))
        elif (updated := nativegang.resized(existing, task_gang.min_count)) is not None:
            effects += Effects(update=(updated,))
    joined = {
        task: nativegang.task_pod_group_name(seen.job, task)
        for task in seen.tasks
        if nativegang.task_pod_group_name(seen.job, task) in groups
    }
    joined.update((g.task, g.pod_group) for g in gangs)
    return joined, effects


def report_partial(seen: JobRound, gangs: list[nativegang.TaskGang]) -> Effects:
    missing = nativegang.unexpressed(seen.job, gangs)
    if not missing:
        return steps.NOTHING
    return steps.event(
        "Warning",
        nativegang.PARTIAL_REASON,
        f"kube-scheduler's gang is {nativegang.gang_summary(seen.job, gangs)}; "
        "it cannot express " + ", ".join(missing),
    )


def scale_down(seen: JobRound, draft: Draft) -> Draft:
    replicas = {name: t.replica_count for name, t in seen.tasks.items()}
    return steps.kill(seen, draft, scaling.extra_pods(seen.pods, replicas))


def missing_pods(
    seen: JobRound,
    draft: Draft,
    claims: list[tuple[str, str]],
    native_pod_groups: Mapping[str, str] | None = None,
) -> list[WireObject]:
    """The pods of the slots that have none (and no recorded success), whose tasks' dependencies
    are ready; as Kueue's admission shapes them."""
    made: list[WireObject] = []
    ctx = PodContext(
        job=seen.job,
        version=draft.status.version,
        retry_count=draft.status.retry_count,
        pod_group=labels.pod_group_name(seen.job.name, seen.job.uid),
        claims=claims,
        plugins=list(seen.plugins),
        attempt=attempts.current_index(draft.status.attempts),
        native_pod_groups=native_pod_groups or {},
    )
    live_by_task = steps.pods_by_task(p for p in seen.pods if steps.live(draft, p))
    for task_name, task in seen.tasks.items():
        if not dependson.can_create(seen.job, task, live_by_task):
            continue
        done = draft.status.recorded_succeeded.get(task_name, frozenset())
        override = seen.kueue.overrides.get(task_name)
        replicas = task.replica_count
        if override is not None and override.count is not None:
            replicas = min(replicas, override.count)
        for i in scaling.missing_indexes(
            seen.job.name, task_name, replicas, seen.all_pods_by_name.keys(), done
        ):
            pod = build_pod(ctx, task, i)
            made.append(pod if override is None else kueue.apply_override(pod, override))
    return made


def transitions(seen: JobRound, draft: Draft) -> Draft:
    if draft.transitioned:
        return draft  # one phase per status write
    all_finished, ghosts = steps.slots(seen, draft)
    counts = steps.tally(seen, draft).counts(extra_succeeded=ghosts)
    min_available = podgroup.job_min_available(seen.job)
    if draft.status.phase == JobPhase.PENDING:
        outcome = state.pending_outcome(counts, min_available)
        if outcome is not None:
            draft, _ = steps.set_phase(seen, draft, outcome.to, outcome.reason, outcome.message)
        return draft
    succeeded = steps.succeeded_now(seen, draft)
    met = successpolicy.evaluate(seen.job.spec.success_policy, list(seen.tasks), succeeded)
    if met is not None:
        draft, _ = steps.set_phase(seen, draft, JobPhase.COMPLETING, "SuccessPolicy", met.message)
        return steps.drop_created(draft)
    outcome = state.running_outcome(
        counts,
        total_replicas=seen.job.spec.total_replicas,
        min_available=min_available,
        min_success=seen.job.spec.min_success,
        tasks=[
            state.TaskFinish(
                name, t.replica_count, t.min_available, len(succeeded.get(name, set()))
            )
            for name, t in seen.tasks.items()
        ],
        all_finished=all_finished,
    )
    if outcome is None:
        return draft
    draft, _ = steps.set_phase(seen, draft, outcome.to, outcome.reason, outcome.message)
    if outcome.to in (JobPhase.COMPLETING, JobPhase.FAILED):
        draft = steps.drop_created(draft)
    return draft
