"""One reconcile's inputs (`JobRound`: what the round has seen, read once, the job's pods
each read into a `podview.JobPod`) and the plan it is drafting (`Draft`), with the steps every
concern shares: owning and killing pods, changing the phase, deleting the PodGroup, counting
the pods and succeeded slots.

The concern modules (`events`, `actions`, `phasesync`, `activesync`, `outcome`) are functions of
`(seen, draft)`; `plan.reconcile` calls them in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any, Literal

from controller.job.decide import kueue, memory, podgroup, podview, restarts, suspension, timers
from controller.job.decide import status as status_mod
from controller.job.decide.model import (
    EventRecord,
    ObjectRef,
    Observed,
    Plan,
    PlanSettings,
)
from controller.job.decide.plugins import JobPlugin, build_plugins
from controller.job.decide.podview import JobPod
from controller.job.decide.statuscodec import StatusDraft, decode
from shared import labels
from shared.models import Job, JobPhase, TaskSpec
from shared.models.job import RetryPolicy
from shared.wire import WireObject

# After a phase change, look again soon even if no watch event arrives.
FOLLOW_UP = timedelta(seconds=1)


@dataclass(frozen=True)
class JobRound:
    """What one reconcile reads; it does not change while the plan is drafted."""

    observed: Observed
    settings: PlanSettings
    # Kubernetes times are UTC; a naive `now` is taken to be UTC too.
    now: datetime
    raw_job: WireObject
    job: Job
    tasks: Mapping[str, TaskSpec]
    # The job's own pods, each read once, as read (for the rules that take wire pods), and
    # every observed pod by name (a foreign one holds its name).
    pods: tuple[JobPod, ...]
    pod_objects: tuple[WireObject, ...]
    pods_by_name: Mapping[str, JobPod]
    all_pods_by_name: Mapping[str, WireObject]
    max_retry: int
    retry_policy: RetryPolicy | None
    kueue: kueue.KueueSteps
    # Suspended for this plan: spec.suspend, or Kueue suspends the job in this very plan (a
    # job Kueue unsuspends gets its pods in the next plan, once spec.suspend is false).
    suspended: bool

    @cached_property
    def slot_names(self) -> Mapping[str, tuple[str, ...]]:
        """Each task's pod names, index by index (`labels.pod_name`)."""
        return {
            name: tuple(labels.pod_name(self.job.name, name, i) for i in range(t.replica_count))
            for name, t in self.tasks.items()
        }

    @cached_property
    def pod_group_spec(self) -> WireObject:
        """The spec the job's PodGroup should have (`podgroup.desired_spec`), worked out once:
        the scale check and the PodGroup's update both compare with it."""
        return podgroup.desired_spec(self.job, self.observed.priority_values)


@dataclass
class Draft:
    """The plan being drafted and the status it will write."""

    status: StatusDraft
    memory: memory.PlannerMemory
    timers: dict[str, timers.Timer]
    plan: Plan = field(default_factory=Plan)
    # Pods this plan deletes, and the pods it creates.
    deleting: set[str] = field(default_factory=set)
    created: list[WireObject] = field(default_factory=list)
    requeue: list[timedelta] = field(default_factory=list)
    missing_pvcs: list[str] = field(default_factory=list)
    pod_group_gone: bool = False
    transitioned: bool = False
    # A transition with effects was decided: this plan only writes it (and its events).
    decided: bool = False
    plugins_built: list[JobPlugin] | None = None


@dataclass(frozen=True)
class Effects:
    """What a concern asks of the API, as a value: the objects to create, update or delete, the
    Events, when to look again, a change to the Job's own spec, Kueue's Workload writes. The
    concern returns it; `add` puts it into the plan (the applier orders objects by kind)."""

    create: tuple[WireObject, ...] = ()
    update: tuple[WireObject, ...] = ()
    delete: tuple[ObjectRef, ...] = ()
    events: tuple[EventRecord, ...] = ()
    requeue: tuple[timedelta, ...] = ()
    # Fields of the Job's `spec` to write back (merged with other concerns').
    spec: tuple[tuple[str, Any], ...] = ()
    delete_commands: tuple[str, ...] = ()
    delete_job: bool = False
    workload_status: WireObject | None = None
    adopt_workload: WireObject | None = None

    def __add__(self, other: Effects) -> Effects:
        return Effects(
            create=self.create + other.create,
            update=self.update + other.update,
            delete=self.delete + other.delete,
            events=self.events + other.events,
            requeue=self.requeue + other.requeue,
            spec=self.spec + other.spec,
            delete_commands=self.delete_commands + other.delete_commands,
            delete_job=self.delete_job or other.delete_job,
            workload_status=other.workload_status or self.workload_status,
            adopt_workload=other.adopt_workload or self.adopt_workload,
        )


NOTHING = Effects()


def event(kind: Literal["Normal", "Warning"], reason: str, message: str) -> Effects:
    return Effects(events=(EventRecord(kind, reason, message),))


def add(draft: Draft, effects: Effects) -> None:
    """The one place a concern's effects enter the plan."""
    plan = draft.plan
    plan.create.extend(effects.create)
    plan.update.extend(effects.update)
    plan.delete.extend(effects.delete)
    plan.events.extend(effects.events)
    plan.delete_commands.extend(effects.delete_commands)
    draft.requeue.extend(effects.requeue)
    if effects.spec:
        patch = plan.job_spec_patch or {}
        patch.setdefault("spec", {}).update(effects.spec)
        plan.job_spec_patch = patch
    plan.delete_job = plan.delete_job or effects.delete_job
    if effects.workload_status is not None:
        plan.workload_status = effects.workload_status
    if effects.adopt_workload is not None:
        plan.adopt_workload = effects.adopt_workload


def start(observed: Observed, settings: PlanSettings) -> tuple[JobRound, Draft]:
    now = observed.now if observed.now.tzinfo else observed.now.replace(tzinfo=UTC)
    job = Job.from_wire(observed.job)
    status = decode(job.status)
    remembered = memory.load(observed.memory)
    every_pod = [podview.read(p) for p in observed.pods]
    pods = tuple(p for p in every_pod if owns(job, p))
    pod_objects = tuple(p.wire for p in pods)
    kueue_steps = _kueue_steps(observed, settings, job, status, pods, now)
    seen = JobRound(
        observed=observed,
        settings=settings,
        now=now,
        raw_job=observed.job,
        job=job,
        tasks={str(t.name): t for t in job.spec.tasks},
        pods=pods,
        pod_objects=pod_objects,
        pods_by_name={p.name: p for p in pods},
        all_pods_by_name={p.name: p.wire for p in every_pod},
        max_retry=(
            job.spec.max_retry if job.spec.max_retry is not None else labels.DEFAULT_MAX_RETRY
        ),
        retry_policy=job.spec.retry_policy,
        kueue=kueue_steps,
        suspended=suspension.is_suspended(observed.job) or kueue_steps.set_suspend is True,
    )
    draft = Draft(
        status=status, memory=remembered, timers=timers.decode(remembered.get(memory.TIMERS))
    )
    _record_deleted_successes(seen, draft)
    return seen, draft


def _kueue_steps(
    observed: Observed,
    settings: PlanSettings,
    job: Job,
    status: StatusDraft,
    pods: Iterable[JobPod],
    now: datetime,
) -> kueue.KueueSteps:
    if not settings.kueue:
        return kueue.KueueSteps()
    finished: bool | None = None
    if status.initial_phase == JobPhase.COMPLETED:
        finished = True
    elif status.initial_phase in (JobPhase.FAILED, JobPhase.TERMINATED):
        finished = False
    return kueue.plan_kueue(
        observed.job,
        observed.workload,
        observed.resource_flavors,
        priority_values=observed.priority_values,
        finished=finished,
        finish_message=f"the job is {status.phase.value}: {status.message or ''}".rstrip(": "),
        pods_gone=all(p.finished and not p.deleting for p in pods),
        now=status_mod.rfc3339(now),
    )


def _record_deleted_successes(seen: JobRound, draft: Draft) -> None:
    """A succeeded pod deleted before any status recorded it still counts (difference 8)."""
    for edge in seen.observed.pod_edges:
        pod = podview.read(edge.pod)
        if edge.kind != "deleted" or pod.phase != podview.SUCCEEDED:
            continue
        if pod.out_of_sync:
            continue  # replaced by a restart: its success no longer counts
        if not owns(seen.job, pod) or pod.version < draft.status.version:
            continue
        if pod.task is not None and pod.index is not None:
            draft.status.recorded_succeeded.setdefault(pod.task, set()).add(pod.index)


def owns(job: Job, pod: JobPod) -> bool:
    """The job's own pod: controlled by the job's uid, or (no controller) labelled with its
    name."""
    if pod.owner_uid is not None:
        return pod.owner_uid == job.uid
    return pod.job_label == job.name


def live(draft: Draft, pod: JobPod) -> bool:
    """Exists and is not going away (not deleted, not being deleted by this plan)."""
    return not pod.deleting and pod.name not in draft.deleting


def actionable(draft: Draft, pod: JobPod) -> bool:
    """A pod whose events can still drive policies: live, ours to act on, current version."""
    return live(draft, pod) and not pod.out_of_sync and pod.version >= draft.status.version


def set_phase(seen: JobRound, draft: Draft, to: JobPhase, reason: str, message: str) -> bool:
    """Move to `to`; False (nothing changes) when the phase already changed in this plan:
    every phase is written on its own, so watchers see each one, and the next reconcile
    continues from the written phase."""
    s = draft.status
    if to == s.phase and (s.initial_phase is not None or draft.transitioned):
        s.reason, s.message = reason, message
        return True
    if draft.transitioned:
        draft.requeue.append(FOLLOW_UP)
        return False
    when = status_mod.rfc3339(seen.now)
    previous = s.phase
    s.phase, s.reason, s.message = to, reason, message
    s.last_transition = when
    s.conditions = status_mod.with_condition(s.conditions, to.value, when)
    s.running_duration = status_mod.running_duration(seen.raw_job, seen.now)
    first = s.initial_phase is None and not draft.transitioned
    draft.transitioned = True
    # A new job has no phase yet: its first event names where it starts, not "Pending -> …".
    change = f"job phase {to.value}" if first else f"job phase {previous.value} -> {to.value}"
    draft.plan.events.append(EventRecord("Normal", reason, f"{change}: {message}"))
    return True


def kill(seen: JobRound, draft: Draft, pods: Iterable[JobPod]) -> None:
    """Mark then delete: our own deletions never come back as PodEvicted."""
    for pod in pods:
        if pod.deleting or pod.name in draft.deleting:
            continue
        ref = ObjectRef("v1", "Pod", seen.job.namespace, pod.name, pod.uid)
        draft.plan.annotate_out_of_sync.append(ref)
        draft.plan.delete.append(ref)
        draft.deleting.add(pod.name)


def kill_unfinished(seen: JobRound, draft: Draft) -> None:
    kill(seen, draft, (p for p in seen.pods if not p.finished))


def delete_pod_group(seen: JobRound, draft: Draft) -> None:
    pg = seen.observed.pod_group
    if pg is None or draft.pod_group_gone:
        return
    uid = podview.uid_of(pg) or None
    if uid is not None and draft.memory.get(memory.DELETED_POD_GROUP) == uid:
        draft.pod_group_gone = True
        return
    draft.plan.delete.append(
        ObjectRef(
            labels.SCHEDULING_API_VERSION,
            labels.PODGROUP_KIND,
            seen.job.namespace,
            podview.name_of(pg),
            uid,
        )
    )
    if uid is not None:
        draft.memory["deletedPodGroupUid"] = uid
    draft.pod_group_gone = True


def pod_group_usable(seen: JobRound, draft: Draft) -> WireObject | None:
    """The observed PodGroup unless it is the one this controller deleted (stale cache)."""
    pg = seen.observed.pod_group
    if pg is None or draft.pod_group_gone:
        return None
    if draft.memory.get(memory.DELETED_POD_GROUP) == podview.uid_of(pg):
        return None
    return pg


def plugins(seen: JobRound, draft: Draft) -> list[JobPlugin]:
    if draft.plugins_built is None:
        draft.plugins_built, unknown = build_plugins(
            seen.job, seen.settings, seen.observed.children, draft.memory, seen.observed.ssh_key
        )
        for name in unknown:
            draft.plan.events.append(
                EventRecord("Warning", "PluginError", f"unknown plugin {name} is ignored")
            )
    return draft.plugins_built


def end_restart(draft: Draft) -> None:
    draft.status.restart = None
    draft.status.controlled.pop(restarts.RECORD_KEY, None)


def pods_by_task(pods: Iterable[JobPod]) -> dict[str, list[Mapping[str, Any]]]:
    """The pods as read, by task (pods with no task left out)."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        if pod.task is not None:
            out.setdefault(pod.task, []).append(pod.wire)
    return out


def pod_of(seen: JobRound, name: str | None) -> Mapping[str, Any] | None:
    """The pod an event is about, as last seen (a deleted pod from its watch edge)."""
    if not name:
        return None
    if name in seen.all_pods_by_name:
        return seen.all_pods_by_name[name]
    return next((e.pod for e in seen.observed.pod_edges if podview.name_of(e.pod) == name), None)


# ---------------------------------------------------------------------- succeeded slots


def succeeded_now(seen: JobRound, draft: Draft) -> dict[str, set[int]]:
    """Per task, indexes < replicas whose pod succeeded, or whose succeeded pod was deleted
    (recorded earlier and not recreated: difference 8)."""
    out: dict[str, set[int]] = {}
    for task_name, names in seen.slot_names.items():
        done: set[int] = set()
        for i, name in enumerate(names):
            pod = seen.pods_by_name.get(name)
            if pod is not None and live(draft, pod):
                if pod.phase == podview.SUCCEEDED:
                    done.add(i)
            elif pod is None and i in draft.status.recorded_succeeded.get(task_name, set()):
                done.add(i)
        if done:
            out[task_name] = done
    return out


def slots(seen: JobRound, draft: Draft) -> tuple[bool, int]:
    """(every slot finished, succeeded slots whose pod no longer exists)."""
    all_finished = True
    ghost_succeeded = 0
    created = {podview.name_of(p) for p in draft.created}
    for task_name, names in seen.slot_names.items():
        for i, name in enumerate(names):
            pod = seen.pods_by_name.get(name)
            if pod is None:
                recorded = draft.status.recorded_succeeded.get(task_name, set())
                if name not in created and i in recorded:
                    ghost_succeeded += 1
                else:
                    all_finished = False
            elif not live(draft, pod) or not pod.finished:
                all_finished = False
    return all_finished, ghost_succeeded


def tally(seen: JobRound, draft: Draft) -> status_mod.PodTally:
    counted = status_mod.PodTally()
    for pod in seen.pods:
        # A decision only writes the status: the pods it will kill are still as they are.
        going = pod.deleting or (pod.name in draft.deleting and not draft.decided)
        counted.add(pod.task, pod.phase, terminating=going)
    for made in draft.created:
        counted.add(podview.task_of(made), podview.PENDING, terminating=False)
    return counted


def add_pods(seen: JobRound, draft: Draft, pods: list[WireObject]) -> None:
    """The pods this plan creates: created only while the job still exists with its uid."""
    if pods:
        draft.created = list(pods)
        draft.plan.create.extend(pods)
        draft.plan.guard_uid = seen.job.uid


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


def keep_only_the_decision(draft: Draft) -> None:
    """A transition with effects is persisted before any of them: this plan writes the
    status (phase, reason, retryCount, version, the restart record) and its events; the
    kills and deletions are planned again from the written phase by the next reconciles,
    which therefore survive any failed write or a crash in between."""
    draft.plan.annotate_out_of_sync = []
    draft.plan.delete = []
    draft.plan.create = []
    draft.plan.update = []
    draft.plan.job_spec_patch = None
    draft.created = []
