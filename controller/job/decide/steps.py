"""One reconcile's inputs (`JobRound`: what the round has seen, read once, the job's pods
each read into a `podview.JobPod`) and the plan it is drafting (`Draft`), with the steps every
concern shares: owning and killing pods, changing the phase, deleting the PodGroup, counting
the pods and succeeded slots.

The concern modules (`events`, `actions`, `phasesync`, `activesync`) are functions of
`(seen, draft)` that return the next draft; both are frozen values, so no concern changes what
another holds. `plan.reconcile` calls them in order and `outcome.finalize` composes the last draft
into the `Plan`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any, Literal, NamedTuple

from controller.job.decide import kueue, memory, podgroup, podview, restarts, suspension, timers
from controller.job.decide import status as status_mod
from controller.job.decide.model import (
    EventRecord,
    ObjectRef,
    Observed,
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
    # The memory as read: the plugins read their own entries from it.
    memory: memory.Memory

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

    @cached_property
    def built_plugins(self) -> tuple[tuple[JobPlugin, ...], tuple[str, ...]]:
        """The job's plugins, and the names vcjob does not know; built once, when first used."""
        built, unknown = build_plugins(
            self.job, self.settings, self.observed.children, self.memory, self.observed.ssh_key
        )
        return tuple(built), tuple(unknown)

    @property
    def plugins(self) -> tuple[JobPlugin, ...]:
        return self.built_plugins[0]


@dataclass(frozen=True)
class Effects:
    """What a concern asks of the API, as a value: the objects to create, update or delete (the
    pods deleted are first marked out of sync), the Events, when to look again, a change to the
    Job's own spec, Kueue's Workload writes. `outcome.finalize` composes them into the `Plan`
    (the applier orders objects by kind)."""

    create: tuple[WireObject, ...] = ()
    update: tuple[WireObject, ...] = ()
    delete: tuple[ObjectRef, ...] = ()
    annotate_out_of_sync: tuple[ObjectRef, ...] = ()
    events: tuple[EventRecord, ...] = ()
    requeue: tuple[timedelta, ...] = ()
    # Fields of the Job's `spec` to write back (merged with other concerns').
    spec: tuple[tuple[str, Any], ...] = ()
    delete_commands: tuple[str, ...] = ()
    delete_job: bool = False
    workload_status: WireObject | None = None
    adopt_workload: WireObject | None = None

    def __add__(self, other: Effects) -> Effects:
        if not self:
            return other
        if not other:
            return self
        return Effects(
            create=self.create + other.create,
            update=self.update + other.update,
            delete=self.delete + other.delete,
            annotate_out_of_sync=self.annotate_out_of_sync + other.annotate_out_of_sync,
            events=self.events + other.events,
            requeue=self.requeue + other.requeue,
            spec=self.spec + other.spec,
            delete_commands=self.delete_commands + other.delete_commands,
            delete_job=self.delete_job or other.delete_job,
            workload_status=other.workload_status or self.workload_status,
            adopt_workload=other.adopt_workload or self.adopt_workload,
        )

    def __bool__(self) -> bool:
        return bool(
            self.create
            or self.update
            or self.delete
            or self.annotate_out_of_sync
            or self.events
            or self.requeue
            or self.spec
            or self.delete_commands
            or self.delete_job
            or self.workload_status is not None
            or self.adopt_workload is not None
        )


NOTHING = Effects()


class Draft(NamedTuple):
    """The plan as drafted so far: a value. Each step returns a new draft (`_replace`), so the
    concerns hand each other no shared, changing state. (A named tuple: the round makes a few
    of them, and a tuple is made several times faster than a frozen dataclass.)"""

    status: StatusDraft
    memory: memory.Memory
    timers: Mapping[str, timers.Timer]
    effects: Effects = NOTHING
    # Pods this plan deletes, and the pods it creates (only while the job still exists with
    # the uid `guard_uid`).
    deleting: frozenset[str] = frozenset()
    created: tuple[WireObject, ...] = ()
    guard_uid: str | None = None
    missing_pvcs: tuple[str, ...] = ()
    pod_group_gone: bool = False
    transitioned: bool = False
    # A transition with effects was decided: this plan only writes it (and its events).
    decided: bool = False


def event(kind: Literal["Normal", "Warning"], reason: str, message: str) -> Effects:
    return Effects(events=(EventRecord(kind, reason, message),))


def add(draft: Draft, effects: Effects) -> Draft:
    """The one place a concern's effects enter the draft."""
    if not effects:
        return draft
    return draft._replace(effects=draft.effects + effects)


def requeue(draft: Draft, after: timedelta) -> Draft:
    return add(draft, Effects(requeue=(after,)))


def remember(draft: Draft, changes: Mapping[str, Any], dropped: Iterable[str] = ()) -> Draft:
    """The draft with these memory entries set and those `dropped` removed."""
    gone = [key for key in dropped if key in draft.memory and key not in changes]
    if not gone and all(draft.memory.get(k, changes) == v for k, v in changes.items()):
        return draft  # already so
    return draft._replace(memory=memory.updated(draft.memory, changes, gone))


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
        memory=remembered,
    )
    recorded = _with_deleted_successes(seen, status)
    if recorded is not status.recorded_succeeded:
        status = status._replace(recorded_succeeded=recorded)
    draft = Draft(
        status=status,
        memory=remembered,
        timers=timers.decode(memory.timer_records(remembered)),
    )
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


def _with_deleted_successes(seen: JobRound, status: StatusDraft) -> Mapping[str, frozenset[int]]:
    """A succeeded pod deleted before any status recorded it still counts (difference 8)."""
    recorded = status.recorded_succeeded
    out: dict[str, frozenset[int]] | None = None
    for edge in seen.observed.pod_edges:  # every edge is a deletion
        pod = podview.read(edge.pod)
        if pod.phase != podview.SUCCEEDED or pod.out_of_sync:
            continue  # out of sync: replaced by a restart, its success no longer counts
        if not owns(seen.job, pod) or pod.version < status.version:
            continue
        if pod.task is not None and pod.index is not None:
            out = dict(recorded) if out is None else out
            out[pod.task] = out.get(pod.task, frozenset()) | {pod.index}
    return recorded if out is None else out


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


def set_phase(
    seen: JobRound, draft: Draft, to: JobPhase, reason: str, message: str
) -> tuple[Draft, bool]:
    """Move to `to`; False (nothing changes) when the phase already changed in this plan:
    every phase is written on its own, so watchers see each one, and the next reconcile
    continues from the written phase."""
    s = draft.status
    if to == s.phase and (s.initial_phase is not None or draft.transitioned):
        return draft._replace(status=s._replace(reason=reason, message=message)), True
    if draft.transitioned:
        return requeue(draft, FOLLOW_UP), False
    when = status_mod.rfc3339(seen.now)
    moved = s._replace(
        phase=to,
        reason=reason,
        message=message,
        last_transition=when,
        conditions=tuple(status_mod.with_condition(s.conditions, to.value, when)),
        running_duration=status_mod.running_duration(seen.raw_job, seen.now),
    )
    # A new job has no phase yet: its first event names where it starts, not "Pending -> …".
    first = s.initial_phase is None
    change = f"job phase {to.value}" if first else f"job phase {s.phase.value} -> {to.value}"
    said = event("Normal", reason, f"{change}: {message}")
    return add(draft._replace(status=moved, transitioned=True), said), True


def kill(seen: JobRound, draft: Draft, pods: Iterable[JobPod]) -> Draft:
    """Mark then delete: our own deletions never come back as PodEvicted."""
    refs = tuple(
        ObjectRef("v1", "Pod", seen.job.namespace, pod.name, pod.uid)
        for pod in pods
        if not pod.deleting and pod.name not in draft.deleting
    )
    if not refs:
        return draft
    killed = Effects(annotate_out_of_sync=refs, delete=refs)
    return add(draft._replace(deleting=draft.deleting | {r.name for r in refs}), killed)


def kill_unfinished(seen: JobRound, draft: Draft) -> Draft:
    return kill(seen, draft, (p for p in seen.pods if not p.finished))


def delete_pod_group(seen: JobRound, draft: Draft) -> Draft:
    pg = seen.observed.pod_group
    if pg is None or draft.pod_group_gone:
        return draft
    uid = podview.uid_of(pg) or None
    gone = draft._replace(pod_group_gone=True)
    if uid is not None and memory.deleted_pod_group(draft.memory) == uid:
        return gone
    ref = ObjectRef(
        labels.SCHEDULING_API_VERSION,
        labels.PODGROUP_KIND,
        seen.job.namespace,
        podview.name_of(pg),
        uid,
    )
    if uid is not None:
        gone = remember(gone, {memory.DELETED_POD_GROUP: uid})
    return add(gone, Effects(delete=(ref,)))


def pod_group_usable(seen: JobRound, draft: Draft) -> WireObject | None:
    """The observed PodGroup unless it is the one this controller deleted (stale cache)."""
    pg = seen.observed.pod_group
    if pg is None or draft.pod_group_gone:
        return None
    if memory.deleted_pod_group(draft.memory) == podview.uid_of(pg):
        return None
    return pg


def unknown_plugins(seen: JobRound) -> Effects:
    """A Warning for each plugin vcjob does not know (it is ignored)."""
    return sum(
        (
            event("Warning", "PluginError", f"unknown plugin {name} is ignored")
            for name in seen.built_plugins[1]
        ),
        NOTHING,
    )


def end_restart(draft: Draft) -> Draft:
    s = draft.status
    controlled = {k: v for k, v in s.controlled.items() if k != restarts.RECORD_KEY}
    return draft._replace(status=s._replace(restart=None, controlled=controlled))


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


# ---------------------------------------------------------------------- succeeded slots


def succeeded_now(seen: JobRound, draft: Draft) -> dict[str, frozenset[int]]:
    """Per task, indexes < replicas whose pod succeeded, or whose succeeded pod was deleted
    (recorded earlier and not recreated: difference 8)."""
    out: dict[str, frozenset[int]] = {}
    recorded = draft.status.recorded_succeeded
    for task_name, names in seen.slot_names.items():
        done: set[int] = set()
        for i, name in enumerate(names):
            pod = seen.pods_by_name.get(name)
            if pod is not None and live(draft, pod):
                if pod.phase == podview.SUCCEEDED:
                    done.add(i)
            elif pod is None and i in recorded.get(task_name, ()):
                done.add(i)
        if done:
            out[task_name] = frozenset(done)
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
                recorded = draft.status.recorded_succeeded.get(task_name, ())
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


def add_pods(seen: JobRound, draft: Draft, pods: Iterable[WireObject]) -> Draft:
    """The pods this plan creates: created only while the job still exists with its uid."""
    made = tuple(pods)
    if not made:
        return draft
    creating = draft._replace(created=made, guard_uid=seen.job.uid)
    return add(creating, Effects(create=made))


def drop_created(draft: Draft) -> Draft:
    """A job that stops running creates nothing more in this plan."""
    if not draft.created:
        return draft
    names = {podview.name_of(p) for p in draft.created}
    kept = tuple(
        o
        for o in draft.effects.create
        if not (o.get("kind") == "Pod" and podview.name_of(o) in names)
    )
    return draft._replace(effects=replace(draft.effects, create=kept), created=())


def keep_only_the_decision(draft: Draft) -> Draft:
    """A transition with effects is persisted before any of them: this plan writes the
    status (phase, reason, retryCount, version, the restart record) and its events; the
    kills and deletions are planned again from the written phase by the next reconciles,
    which therefore survive any failed write or a crash in between."""
    kept = replace(draft.effects, annotate_out_of_sync=(), delete=(), create=(), update=(), spec=())
    return draft._replace(effects=kept, created=())
