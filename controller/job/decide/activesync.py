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
from controller.job.decide.model import EventRecord
from controller.job.decide.podgen import PodContext, build_pod
from controller.job.decide.steps import Draft, JobRound
from shared import labels
from shared.models import JobPhase
from shared.wire import WireObject

PVC_RECHECK = timedelta(seconds=10)


def sync(seen: JobRound, draft: Draft) -> None:
    s = draft.status
    if s.reason == suspension.STATE_REASON and s.phase == JobPhase.PENDING:
        steps.set_phase(
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
    s.controlled.update(vplan.controlled)
    if vplan.missing:
        # difference 15: wait for the user's PVC, never terminate because of it.
        draft.missing_pvcs = list(vplan.missing)
        names = ", ".join(vplan.missing)
        if s.phase == JobPhase.PENDING:
            steps.set_phase(
                seen,
                draft,
                JobPhase.PENDING,
                "PVCNotFound",
                f"PersistentVolumeClaim {names} not found; the job stays Pending until it exists",
            )
        draft.requeue.append(PVC_RECHECK)
        return
    if s.reason == "PVCNotFound":
        steps.set_phase(
            seen, draft, JobPhase.PENDING, "PVCFound", "every PersistentVolumeClaim exists"
        )
    draft.plan.create.extend(vplan.creates)
    if vplan.spec_volumes is not None:
        draft.plan.job_spec_patch = {"spec": {"volumes": vplan.spec_volumes}}
    claims = vplan.claims

    pg = sync_pod_group(seen, draft)
    if (warning := podgroup.pending_warning(seen.job, pg)) is not None:
        draft.plan.events.append(EventRecord("Warning", "PodGroupPending", warning))
    native_groups = sync_native_gang(seen, draft)
    scale_down(seen, draft)
    if gang.gate_open(seen.job.spec.scheduler_name, seen.settings.gang_schedulers, pg):
        create_pods(seen, draft, claims, native_groups)
    transitions(seen, draft)


def sync_pod_group(seen: JobRound, draft: Draft) -> WireObject | None:
    """Create the PodGroup first; bring its spec in line on scale."""
    pg = steps.pod_group_usable(seen, draft)
    if pg is None:
        if seen.observed.pod_group is not None and not draft.pod_group_gone:
            return None  # the deleted one is still in the cache: wait for it to go
        # The deleted group's uid stays remembered: a stale cache copy of it must never
        # open the gate for the new pods.
        draft.plan.create.append(podgroup.build_pod_group(seen.job, seen.observed.priority_values))
        return None
    updated = podgroup.updated_pod_group(pg, seen.job, seen.observed.priority_values)
    if updated is not None:
        draft.plan.update.append(updated)
    return pg


def sync_native_gang(seen: JobRound, draft: Draft) -> dict[str, str]:
    """Kubernetes' own gang for a job kube-scheduler places: its Workload and PodGroups created
    before the first pod, the gangs' sizes kept in line on scale. Returns the PodGroup each
    task's pods join; none when the job has no native gang (and, once, says why not)."""
    if not nativegang.applies(seen.job, seen.settings.native_gang_schedulers):
        return {}
    first_round = seen.observed.pod_group is None and not seen.pods
    if not seen.settings.native_gang_served:
        if first_round:
            draft.plan.events.append(
                EventRecord(
                    "Warning", nativegang.UNAVAILABLE_REASON, nativegang.UNAVAILABLE_MESSAGE
                )
            )
        return {}
    groups = {podview.name_of(g): g for g in seen.observed.native_pod_groups}
    single = nativegang.name_of(seen.job)
    gangs = nativegang.task_gangs(seen.job)
    # The shape chosen when the gang was created stays for the job's life.
    composite = seen.observed.native_composite_pod_group is not None or (
        single not in groups and seen.settings.composite_gang_served and bool(gangs)
    )
    if composite:
        return sync_composite_gang(seen, draft, groups, first_round)
    existing = groups.get(single)
    if existing is None:
        known = seen.observed.priority_values
        draft.plan.create.extend(
            [
                nativegang.build_workload(seen.job, known),
                nativegang.build_pod_group(seen.job, known),
            ]
        )
        if first_round:
            report_partial(seen, draft, [])
    elif (updated := nativegang.updated_pod_group(existing, seen.job)) is not None:
        draft.plan.update.append(updated)
    return dict.fromkeys(seen.tasks, single)


def sync_composite_gang(
    seen: JobRound, draft: Draft, groups: dict[str, WireObject], first_round: bool
) -> dict[str, str]:
    """The tasks' own gangs: a CompositePodGroup first, then a PodGroup per task, each resized
    with its task on scale. A task whose group exists keeps joining it."""
    known = seen.observed.priority_values
    gangs = nativegang.child_gangs(seen.job)
    if seen.observed.native_composite_pod_group is None:
        draft.plan.create.extend(
            [
                nativegang.build_composite_workload(seen.job, gangs, known),
                nativegang.build_composite_pod_group(seen.job, gangs, known),
            ]
        )
        if first_round:
            report_partial(seen, draft, gangs)
    for task_gang in gangs:
        existing = groups.get(task_gang.pod_group)
        if existing is None:
            draft.plan.create.append(nativegang.build_task_pod_group(seen.job, task_gang, known))
        elif (updated := nativegang.resized(existing, task_gang.min_count)) is not None:
            draft.plan.update.append(updated)
    joined = {
        task: nativegang.task_pod_group_name(seen.job, task)
        for task in seen.tasks
        if nativegang.task_pod_group_name(seen.job, task) in groups
    }
    joined.update((g.task, g.pod_group) for g in gangs)
    return joined


def report_partial(seen: JobRound, draft: Draft, gangs: list[nativegang.TaskGang]) -> None:
    if missing := nativegang.unexpressed(seen.job, gangs):
        draft.plan.events.append(
            EventRecord(
                "Warning",
                nativegang.PARTIAL_REASON,
                f"kube-scheduler's gang is {nativegang.gang_summary(seen.job, gangs)}; "
                "it cannot express " + ", ".join(missing),
            )
        )


def scale_down(seen: JobRound, draft: Draft) -> None:
    replicas = {name: t.replica_count for name, t in seen.tasks.items()}
    steps.kill(seen, draft, scaling.extra_pods(seen.pods, replicas))


def create_pods(
    seen: JobRound,
    draft: Draft,
    claims: list[tuple[str, str]],
    native_pod_groups: Mapping[str, str] | None = None,
) -> None:
    ctx = PodContext(
        job=seen.job,
        version=draft.status.version,
        retry_count=draft.status.retry_count,
        pod_group=labels.pod_group_name(seen.job.name, seen.job.uid),
        claims=claims,
        plugins=steps.plugins(seen, draft),
        attempt=attempts.current_index(draft.status.attempts),
        native_pod_groups=native_pod_groups or {},
    )
    live_by_task = steps.pods_by_task(p for p in seen.pods if steps.live(draft, p))
    for task_name, task in seen.tasks.items():
        if not dependson.can_create(seen.job, task, live_by_task):
            continue
        done = draft.status.recorded_succeeded.get(task_name, set())
        override = seen.kueue.overrides.get(task_name)
        replicas = task.replica_count
        if override is not None and override.count is not None:
            replicas = min(replicas, override.count)
        for i in scaling.missing_indexes(
            seen.job.name, task_name, replicas, seen.all_pods_by_name.keys(), done
        ):
            pod = build_pod(ctx, task, i)
            draft.created.append(pod if override is None else kueue.apply_override(pod, override))
    if draft.created:
        draft.plan.create.extend(draft.created)
        draft.plan.guard_uid = seen.job.uid


def transitions(seen: JobRound, draft: Draft) -> None:
    if draft.transitioned:
        return  # one phase per status write
    all_finished, ghosts = steps.slots(seen, draft)
    counts = steps.tally(seen, draft).counts(extra_succeeded=ghosts)
    min_available = podgroup.job_min_available(seen.job)
    if draft.status.phase == JobPhase.PENDING:
        outcome = state.pending_outcome(counts, min_available)
        if outcome is not None:
            steps.set_phase(seen, draft, outcome.to, outcome.reason, outcome.message)
        return
    succeeded = steps.succeeded_now(seen, draft)
    met = successpolicy.evaluate(seen.job.spec.success_policy, list(seen.tasks), succeeded)
    if met is not None:
        steps.set_phase(seen, draft, JobPhase.COMPLETING, "SuccessPolicy", met.message)
        drop_created(draft)
        return
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
        return
    steps.set_phase(seen, draft, outcome.to, outcome.reason, outcome.message)
    if outcome.to in (JobPhase.COMPLETING, JobPhase.FAILED):
        drop_created(draft)


def drop_created(draft: Draft) -> None:
    """A job that stops running creates nothing more in this plan."""
    if draft.created:
        names = {podview.name_of(p) for p in draft.created}
        draft.plan.create = [
            o
            for o in draft.plan.create
            if not (o.get("kind") == "Pod" and podview.name_of(o) in names)
        ]
        draft.created = []
