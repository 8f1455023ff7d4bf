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
    draft,
    gang,
    kueue,
    nativegang,
    podgroup,
    podview,
    scaling,
    state,
    successpolicy,
    suspension,
    volumes,
)
from controller.job.decide.draft import Draft, JobRound
from controller.job.decide.model import EventRecord
from controller.job.decide.podgen import PodContext, build_pod
from shared import labels
from shared.models import JobPhase
from shared.wire import WireObject

PVC_RECHECK = timedelta(seconds=10)


def sync(r: JobRound, d: Draft) -> None:
    s = d.status
    if s.reason == suspension.STATE_REASON and s.phase == JobPhase.PENDING:
        draft.set_phase(
            r,
            d,
            JobPhase.PENDING,
            "Resumed",
            "spec.suspend is false: the pods of the same attempt are created again",
        )
    vplan = volumes.plan_volumes(
        r.job,
        list(r.raw_job.get("spec", {}).get("volumes") or []),
        r.observed.children,
        r.observed.missing_pvcs,
    )
    s.controlled.update(vplan.controlled)
    if vplan.missing:
        # difference 15: wait for the user's PVC, never terminate because of it.
        d.missing_pvcs = list(vplan.missing)
        names = ", ".join(vplan.missing)
        if s.phase == JobPhase.PENDING:
            draft.set_phase(
                r,
                d,
                JobPhase.PENDING,
                "PVCNotFound",
                f"PersistentVolumeClaim {names} not found; the job stays Pending until it exists",
            )
        d.requeue.append(PVC_RECHECK)
        return
    if s.reason == "PVCNotFound":
        draft.set_phase(r, d, JobPhase.PENDING, "PVCFound", "every PersistentVolumeClaim exists")
    d.plan.create.extend(vplan.creates)
    if vplan.spec_volumes is not None:
        d.plan.job_spec_patch = {"spec": {"volumes": vplan.spec_volumes}}
    claims = vplan.claims

    pg = sync_pod_group(r, d)
    if (warning := podgroup.pending_warning(r.job, pg)) is not None:
        d.plan.events.append(EventRecord("Warning", "PodGroupPending", warning))
    native_groups = sync_native_gang(r, d)
    scale_down(r, d)
    if gang.gate_open(r.job.spec.scheduler_name, r.settings.gang_schedulers, pg):
        create_pods(r, d, claims, native_groups)
    transitions(r, d)


def sync_pod_group(r: JobRound, d: Draft) -> WireObject | None:
    """Create the PodGroup first; bring its spec in line on scale."""
    pg = draft.pod_group_usable(r, d)
    if pg is None:
        if r.observed.pod_group is not None and not d.pod_group_gone:
            return None  # the deleted one is still in the cache: wait for it to go
        # The deleted group's uid stays remembered: a stale cache copy of it must never
        # open the gate for the new pods.
        d.plan.create.append(podgroup.build_pod_group(r.job, r.observed.priority_values))
        return None
    updated = podgroup.updated_pod_group(pg, r.job, r.observed.priority_values)
    if updated is not None:
        d.plan.update.append(updated)
    return pg


def sync_native_gang(r: JobRound, d: Draft) -> dict[str, str]:
    """Kubernetes' own gang for a job kube-scheduler places: its Workload and PodGroups created
    before the first pod, the gangs' sizes kept in line on scale. Returns the PodGroup each
    task's pods join; none when the job has no native gang (and, once, says why not)."""
    if not nativegang.applies(r.job, r.settings.native_gang_schedulers):
        return {}
    first_round = r.observed.pod_group is None and not r.pods
    if not r.settings.native_gang_served:
        if first_round:
            d.plan.events.append(
                EventRecord(
                    "Warning", nativegang.UNAVAILABLE_REASON, nativegang.UNAVAILABLE_MESSAGE
                )
            )
        return {}
    groups = {podview.name_of(g): g for g in r.observed.native_pod_groups}
    single = nativegang.name_of(r.job)
    gangs = nativegang.task_gangs(r.job)
    # The shape chosen when the gang was created stays for the job's life.
    composite = r.observed.native_composite_pod_group is not None or (
        single not in groups and r.settings.composite_gang_served and bool(gangs)
    )
    if composite:
        return sync_composite_gang(r, d, groups, first_round)
    existing = groups.get(single)
    if existing is None:
        known = r.observed.priority_values
        d.plan.create.extend(
            [nativegang.build_workload(r.job, known), nativegang.build_pod_group(r.job, known)]
        )
        if first_round:
            report_partial(r, d, [])
    elif (updated := nativegang.updated_pod_group(existing, r.job)) is not None:
        d.plan.update.append(updated)
    return dict.fromkeys(r.tasks, single)


def sync_composite_gang(
    r: JobRound, d: Draft, groups: dict[str, WireObject], first_round: bool
) -> dict[str, str]:
    """The tasks' own gangs: a CompositePodGroup first, then a PodGroup per task, each resized
    with its task on scale. A task whose group exists keeps joining it."""
    known = r.observed.priority_values
    gangs = nativegang.child_gangs(r.job)
    if r.observed.native_composite_pod_group is None:
        d.plan.create.extend(
            [
                nativegang.build_composite_workload(r.job, gangs, known),
                nativegang.build_composite_pod_group(r.job, gangs, known),
            ]
        )
        if first_round:
            report_partial(r, d, gangs)
    for task_gang in gangs:
        existing = groups.get(task_gang.pod_group)
        if existing is None:
            d.plan.create.append(nativegang.build_task_pod_group(r.job, task_gang, known))
        elif (updated := nativegang.resized(existing, task_gang.min_count)) is not None:
            d.plan.update.append(updated)
    joined = {
        task: nativegang.task_pod_group_name(r.job, task)
        for task in r.tasks
        if nativegang.task_pod_group_name(r.job, task) in groups
    }
    joined.update((g.task, g.pod_group) for g in gangs)
    return joined


def report_partial(r: JobRound, d: Draft, gangs: list[nativegang.TaskGang]) -> None:
    if missing := nativegang.unexpressed(r.job, gangs):
        d.plan.events.append(
            EventRecord(
                "Warning",
                nativegang.PARTIAL_REASON,
                f"kube-scheduler's gang is {nativegang.gang_summary(r.job, gangs)}; "
                "it cannot express " + ", ".join(missing),
            )
        )


def scale_down(r: JobRound, d: Draft) -> None:
    replicas = {name: t.replica_count for name, t in r.tasks.items()}
    draft.kill(r, d, scaling.extra_pods(r.pods, replicas))


def create_pods(
    r: JobRound,
    d: Draft,
    claims: list[tuple[str, str]],
    native_pod_groups: Mapping[str, str] | None = None,
) -> None:
    ctx = PodContext(
        job=r.job,
        version=d.status.version,
        retry_count=d.status.retry_count,
        pod_group=labels.pod_group_name(r.job.name, r.job.uid),
        claims=claims,
        plugins=draft.plugins(r, d),
        attempt=attempts.current_index(d.status.attempts),
        native_pod_groups=native_pod_groups or {},
    )
    live_by_task = draft.pods_by_task(p for p in r.pods if draft.live(d, p))
    for task_name, task in r.tasks.items():
        if not dependson.can_create(r.job, task, live_by_task):
            continue
        done = d.status.recorded_succeeded.get(task_name, set())
        override = r.kueue.overrides.get(task_name)
        replicas = task.replica_count
        if override is not None and override.count is not None:
            replicas = min(replicas, override.count)
        for i in scaling.missing_indexes(
            r.job.name, task_name, replicas, r.all_pods_by_name.keys(), done
        ):
            pod = build_pod(ctx, task, i)
            d.created.append(pod if override is None else kueue.apply_override(pod, override))
    if d.created:
        d.plan.create.extend(d.created)
        d.plan.guard_uid = r.job.uid


def transitions(r: JobRound, d: Draft) -> None:
    if d.transitioned:
        return  # one phase per status write
    all_finished, ghosts = draft.slots(r, d)
    counts = draft.tally(r, d).counts(extra_succeeded=ghosts)
    min_available = podgroup.job_min_available(r.job)
    if d.status.phase == JobPhase.PENDING:
        outcome = state.pending_outcome(counts, min_available)
        if outcome is not None:
            draft.set_phase(r, d, outcome.to, outcome.reason, outcome.message)
        return
    succeeded = draft.succeeded_now(r, d)
    met = successpolicy.evaluate(r.job.spec.success_policy, list(r.tasks), succeeded)
    if met is not None:
        draft.set_phase(r, d, JobPhase.COMPLETING, "SuccessPolicy", met.message)
        drop_created(d)
        return
    outcome = state.running_outcome(
        counts,
        total_replicas=r.job.spec.total_replicas,
        min_available=min_available,
        min_success=r.job.spec.min_success,
        tasks=[
            state.TaskFinish(
                name, t.replica_count, t.min_available, len(succeeded.get(name, set()))
            )
            for name, t in r.tasks.items()
        ],
        all_finished=all_finished,
    )
    if outcome is None:
        return
    draft.set_phase(r, d, outcome.to, outcome.reason, outcome.message)
    if outcome.to in (JobPhase.COMPLETING, JobPhase.FAILED):
        drop_created(d)


def drop_created(d: Draft) -> None:
    """A job that stops running creates nothing more in this plan."""
    if d.created:
        names = {podview.name_of(p) for p in d.created}
        d.plan.create = [
            o for o in d.plan.create if not (o.get("kind") == "Pod" and podview.name_of(o) in names)
        ]
        d.created = []
