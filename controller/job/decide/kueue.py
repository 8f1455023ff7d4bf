"""Kueue's contract for a job framework outside its tree (`integrations.externalFrameworks:
[Job.v1alpha1.batch.volcano.sh]`), as pure functions over wire dicts.

A job labelled `kueue.x-k8s.io/queue-name` starts suspended (the mutating webhook sets
`spec.suspend`); the controller creates its Workload (owned by the job; one podSet per task) and
obeys what Kueue decides on it:

- admitted (`Admitted` True, not evicted): the job is unsuspended, and the pods it creates get
  the node selectors and tolerations of the assigned ResourceFlavors (and of the admission
  checks' podSetUpdates);
- evicted or preempted (`Evicted` True): the job is suspended again; once its pods are gone the
  admission is cleared (`QuotaReserved` False, reason Pending), so Kueue can queue it again;
- not admitted: the job stays suspended, and Kueue's reason (the `QuotaReserved` message) is what
  the job's `Suspended` condition says;
- finished (Completed, Failed, Terminated): the Workload is marked `Finished`, which releases
  its quota. Deleting the job deletes the Workload (garbage collection of the owner reference).

On a MultiKueue worker, the job is a copy MultiKueue made, labelled with the name of the Workload
MultiKueue created beside it (`kueue.x-k8s.io/prebuilt-workload-name`): that Workload is used,
never one of our own, and it is adopted (the job becomes its controller owner) as Kueue's own
integrations adopt a prebuilt Workload. Until it is there, the job stays suspended.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

from controller.job.decide import suspension
from shared import labels
from shared.wire import (
    WireObject,
    annotations_of,
    dig,
    find_condition,
    generation_of,
    labels_of,
    metadata,
    owner_references,
    spec_of,
    status_of,
    uid_of,
)

GROUP: Final = "kueue.x-k8s.io"
VERSION: Final = "v1beta2"
API_VERSION: Final = f"{GROUP}/{VERSION}"
WORKLOAD_KIND: Final = "Workload"
QUEUE_NAME_KEY: Final = labels.KUEUE_QUEUE_NAME_KEY
# The label Kueue's own integrations put on a Workload: the UID of the job it belongs to.
JOB_UID_KEY: Final = "kueue.x-k8s.io/job-uid"
PREBUILT_WORKLOAD_KEY: Final = labels.KUEUE_PREBUILT_WORKLOAD_KEY
# How often a copy on a MultiKueue worker looks for its prebuilt Workload while it is not in the
# cache: nothing maps an unowned Workload to its job, so no watch event would wake the job.
PREBUILT_RECHECK: Final = timedelta(seconds=2)

QUOTA_RESERVED: Final = "QuotaReserved"
ADMITTED: Final = "Admitted"
EVICTED: Final = "Evicted"
FINISHED: Final = "Finished"
REQUEUED: Final = "Requeued"
# Evictions after which Kueue queues the Workload again at once (Requeued True); after any other
# (an admission check's Retry, say) its workload controller does, once its backoff is over.
REQUEUED_AT_ONCE: Final = frozenset({"Preempted", "NodeFailures"})


def queue_name(job: Mapping[str, Any]) -> str | None:
    """The LocalQueue the job is submitted to, or None (the job is not Kueue's)."""
    value = labels_of(job).get(QUEUE_NAME_KEY)
    return str(value) if value else None


def prebuilt_workload_name(job: Mapping[str, Any]) -> str | None:
    """The Workload made for this job by someone else (MultiKueue, on a worker), or None."""
    value = labels_of(job).get(PREBUILT_WORKLOAD_KEY)
    return str(value) if value else None


def _owner_reference(job: Mapping[str, Any]) -> WireObject:
    return {
        "apiVersion": labels.BATCH_API_VERSION,
        "kind": labels.JOB_KIND,
        "name": str(metadata(job).get("name")),
        "uid": uid_of(job),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_controlled_by(workload: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    uid = metadata(job).get("uid")
    return any(
        ref.get("uid") == uid and ref.get("controller") for ref in owner_references(workload)
    )


def adopted(workload: Mapping[str, Any], job: Mapping[str, Any]) -> WireObject:
    """A prebuilt Workload with the job as its controller owner and the job's UID label, as
    Kueue adopts one for its own jobs (written with the resourceVersion it was read at)."""
    out = copy.deepcopy(dict(workload))
    out["apiVersion"], out["kind"] = API_VERSION, WORKLOAD_KIND
    meta = out.setdefault("metadata", {})
    others = [r for r in meta.get("ownerReferences") or [] if not r.get("controller")]
    meta["ownerReferences"] = [*others, _owner_reference(job)]
    meta["labels"] = {**labels_of(out), JOB_UID_KEY: uid_of(job)}
    return out


def workload_name(job_name: str, job_uid: str) -> str:
    """`job-<name>-<hash>` as Kueue names its own jobs' Workloads, within 253 characters."""
    digest = hashlib.sha256(f"{job_name}/{job_uid}".encode()).hexdigest()[:5]
    return f"job-{job_name[: 253 - 10]}-{digest}"


def _is_true(workload: Mapping[str, Any], type_: str) -> bool:
    found = find_condition(workload, type_)
    return found is not None and found.get("status") == "True"


def _condition_text(workload: Mapping[str, Any], type_: str, key: str) -> str:
    """The reason or message of the workload's condition of that type; "" without one."""
    found: Mapping[str, Any] = find_condition(workload, type_) or {}
    return str(found.get(key) or "")


@dataclass(frozen=True)
class WorkloadState:
    """What Kueue decided about a Workload."""

    admitted: bool
    evicted: bool
    finished: bool
    has_admission: bool
    # Why it was evicted, and why it waits (the QuotaReserved message), in Kueue's words.
    eviction_message: str
    waiting_message: str


def read_workload(workload: Mapping[str, Any]) -> WorkloadState:
    return WorkloadState(
        admitted=_is_true(workload, ADMITTED),
        evicted=_is_true(workload, EVICTED),
        finished=_is_true(workload, FINISHED),
        has_admission=bool(status_of(workload).get("admission"))
        or _is_true(workload, QUOTA_RESERVED),
        eviction_message=_condition_text(workload, EVICTED, "message"),
        waiting_message=_condition_text(workload, QUOTA_RESERVED, "message"),
    )


def _pod_set(task: Mapping[str, Any], index: int) -> WireObject:
    name = str(task.get("name") or f"{labels.DEFAULT_TASK_PREFIX}{index}")
    replicas = int(task.get("replicas") or 0)
    template = copy.deepcopy(dict(task.get("template") or {}))
    template.setdefault("spec", {}).setdefault("containers", [])
    pod_set: WireObject = {"name": name, "count": replicas, "template": template}
    min_available = task.get("minAvailable")
    if isinstance(min_available, int) and 0 < min_available < replicas:
        pod_set["minCount"] = min_available
    return pod_set


def build_workload(job: Mapping[str, Any], priority_values: Mapping[str, int]) -> WireObject:
    """The Workload of a queued job: one podSet per task (count = replicas, the task's pod
    template with its requests), the job's priority class, owned by the job."""
    meta, spec = metadata(job), spec_of(job)
    name, uid = str(meta["name"]), uid_of(job)
    pod_sets = [_pod_set(task, i) for i, task in enumerate(spec.get("tasks") or [])]
    # Kueue admits part of a job (PartialAdmission) through the minCount of one podSet only.
    with_min = [p for p in pod_sets if "minCount" in p]
    if len(with_min) > 1:
        for p in with_min:
            p.pop("minCount")
    workload_spec: WireObject = {"queueName": queue_name(job), "podSets": pod_sets}
    priority_class = spec.get("priorityClassName")
    if priority_class:
        workload_spec["priorityClassRef"] = {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": str(priority_class),
        }
        workload_spec["priority"] = int(priority_values.get(str(priority_class), 0))
    return {
        "apiVersion": API_VERSION,
        "kind": WORKLOAD_KIND,
        "metadata": {
            "name": workload_name(name, uid),
            "namespace": meta.get("namespace"),
            "labels": {JOB_UID_KEY: uid},
            "ownerReferences": [_owner_reference(job)],
        },
        "spec": workload_spec,
    }


@dataclass(frozen=True)
class PodOverride:
    """What an admission adds to the pods of one podSet."""

    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    # Pods admitted (Kueue's partial admission admits at least minCount): no more are created.
    count: int | None = None


def pod_overrides(
    workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]
) -> dict[str, PodOverride]:
    """Per podSet (task): the node labels and tolerations of the ResourceFlavors the admission
    assigned, then the admission checks' podSetUpdates."""
    status = status_of(workload)
    out: dict[str, PodOverride] = {}
    for assignment in dig(status, "admission", "podSetAssignments") or []:
        count = assignment.get("count")
        override = PodOverride(count=count if isinstance(count, int) else None)
        for flavor_name in sorted(set((assignment.get("flavors") or {}).values())):
            flavor_spec = spec_of(flavors.get(str(flavor_name)))
            override.node_selector.update(flavor_spec.get("nodeLabels") or {})
            for toleration in flavor_spec.get("tolerations") or []:
                if toleration not in override.tolerations:
                    override.tolerations.append(dict(toleration))
        out[str(assignment.get("name"))] = override
    for check in status.get("admissionChecks") or []:
        for update in check.get("podSetUpdates") or []:
            override = out.setdefault(str(update.get("name")), PodOverride())
            override.node_selector.update(update.get("nodeSelector") or {})
            override.labels.update(update.get("labels") or {})
            override.annotations.update(update.get("annotations") or {})
            for toleration in update.get("tolerations") or []:
                if toleration not in override.tolerations:
                    override.tolerations.append(dict(toleration))
    return out


def apply_override(pod: WireObject, override: PodOverride) -> WireObject:
    """The pod with the admission's node selector, tolerations, labels and annotations added
    (what the task's template already says wins for labels and annotations)."""
    out = copy.deepcopy(pod)
    meta = out.setdefault("metadata", {})
    if override.labels:
        meta["labels"] = {**override.labels, **labels_of(out)}
    if override.annotations:
        meta["annotations"] = {**override.annotations, **annotations_of(out)}
    spec = out.setdefault("spec", {})
    if override.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **override.node_selector}
    if override.tolerations:
        tolerations = list(spec.get("tolerations") or [])
        tolerations += [t for t in override.tolerations if t not in tolerations]
        spec["tolerations"] = tolerations
    return out


def _set_condition(
    conditions: Sequence[Mapping[str, Any]],
    type_: str,
    status: bool,
    reason: str,
    message: str,
    now: str,
    generation: int | None,
) -> list[dict[str, Any]]:
    return suspension.with_condition(
        conditions,
        type_=type_,
        status=status,
        reason=reason,
        message=message,
        now=now,
        generation=generation,
    )


def cleared_admission(workload: Mapping[str, Any], message: str, now: str) -> WireObject:
    """The status after an eviction was carried out (the job's pods are gone): no admission,
    `QuotaReserved` False (reason Pending), `Admitted` False and `Requeued` as the eviction's
    reason calls for, as Kueue's own jobs do it."""
    status = copy.deepcopy(status_of(workload))
    generation = generation_of(workload)
    conditions = list(status.get("conditions") or [])
    reason = _condition_text(workload, EVICTED, "reason")
    if reason:
        conditions = _set_condition(
            conditions, REQUEUED, reason in REQUEUED_AT_ONCE, reason, message, now, generation
        )
    conditions = _set_condition(
        conditions, QUOTA_RESERVED, False, "Pending", message, now, generation
    )
    if suspension.find(conditions, ADMITTED) is not None:
        conditions = _set_condition(
            conditions,
            ADMITTED,
            False,
            "NoReservation",
            "The workload has no reservation",
            now,
            generation,
        )
    status["conditions"] = conditions
    status.pop("admission", None)
    return status


def finished_status(
    workload: Mapping[str, Any], succeeded: bool, message: str, now: str
) -> WireObject:
    """The status that tells Kueue the job finished (its quota is released)."""
    status = copy.deepcopy(status_of(workload))
    generation = generation_of(workload)
    status["conditions"] = _set_condition(
        list(status.get("conditions") or []),
        FINISHED,
        True,
        "Succeeded" if succeeded else "Failed",
        message,
        now,
        generation,
    )
    return status


@dataclass
class KueueSteps:
    """What the Kueue contract asks of one reconcile."""

    create_workload: WireObject | None = None
    # A prebuilt Workload to adopt (written with the job as its controller owner).
    adopt_workload: WireObject | None = None
    # The new `spec.suspend` to write on the job, or None to leave it.
    set_suspend: bool | None = None
    # A Workload whose status is to be written (name and resourceVersion of the observed one).
    workload_status: WireObject | None = None
    # Why Kueue keeps the job suspended, for its Suspended condition and state message.
    waiting_message: str | None = None
    overrides: dict[str, PodOverride] = field(default_factory=dict)
    # Look again after this long although no event may come (a prebuilt Workload not seen yet).
    requeue_after: timedelta | None = None


def plan_kueue(
    job: Mapping[str, Any],
    workload: Mapping[str, Any] | None,
    flavors: Mapping[str, Mapping[str, Any]],
    *,
    priority_values: Mapping[str, int],
    finished: bool | None,
    finish_message: str,
    pods_gone: bool,
    now: str,
) -> KueueSteps:
    """The contract's steps for one job. `finished`: None while the job can still run, True or
    False once it Completed or Failed/Terminated. `pods_gone`: no pod of the job is running or
    being deleted (an eviction is carried out)."""
    steps = KueueSteps()
    queue = queue_name(job)
    if queue is None:
        return steps
    suspended = suspension.is_suspended(job)
    prebuilt = prebuilt_workload_name(job)
    if workload is None and prebuilt is not None:
        if finished is None:
            if not suspended:
                steps.set_suspend = True
            steps.waiting_message = f"waiting for Kueue's Workload {prebuilt} of this job"
            steps.requeue_after = PREBUILT_RECHECK
        return steps
    if workload is not None and prebuilt is not None and not is_controlled_by(workload, job):
        steps.adopt_workload = adopted(workload, job)
    if workload is None:
        if finished is None:
            steps.create_workload = build_workload(job, priority_values)
            if not suspended:
                steps.set_suspend = True
            steps.waiting_message = f"waiting for Kueue to admit the job in LocalQueue {queue}"
        return steps
    state = read_workload(workload)
    if finished is not None:
        if not state.finished:
            steps.workload_status = _with_identity(
                workload, finished_status(workload, finished, finish_message, now)
            )
        return steps
    # An eviction is carried out until the admission is cleared; Kueue then queues the
    # Workload again (and resets Evicted when it reserves quota anew).
    if state.evicted and (state.has_admission or not suspended):
        if not suspended:
            steps.set_suspend = True
        elif pods_gone:
            steps.workload_status = eviction_carried_out(workload, now)
        steps.waiting_message = f"evicted by Kueue: {state.eviction_message}"
        return steps
    if state.admitted:
        steps.overrides = pod_overrides(workload, flavors)
        if suspended:
            steps.set_suspend = False
        return steps
    if not suspended:
        steps.set_suspend = True
    detail = state.waiting_message or "waiting for Kueue to admit the job"
    steps.waiting_message = f"queued by Kueue in LocalQueue {queue}: {detail}"
    return steps


def eviction_carried_out(workload: Mapping[str, Any], now: str) -> WireObject:
    """The evicted Workload, to be written, once the job is suspended and its pods are gone."""
    message = read_workload(workload).eviction_message
    return _with_identity(workload, cleared_admission(workload, message, now))


def _with_identity(workload: Mapping[str, Any], status: WireObject) -> WireObject:
    """The Workload as it was read, with the new status: written with its resourceVersion."""
    out = copy.deepcopy(dict(workload))
    out["apiVersion"], out["kind"] = API_VERSION, WORKLOAD_KIND
    out["status"] = status
    return out
