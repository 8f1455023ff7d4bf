"""Kubernetes' own gang (1.37, `scheduling.k8s.io/v1beta1`, feature gate GenericWorkload): for a
job whose scheduler is kube-scheduler, a Workload and a PodGroup that kube-scheduler places
all-or-nothing, and the pods joined to it by `spec.schedulingGroup.podGroupName`.

The Workload and the PodGroup are named as Volcano's PodGroup (`<job>-<uid>`), owned by the
job and created before its first pod. The gang is the job's `minAvailable`; what the API cannot
say of a Volcano Job (network topology, the job's minAvailable beyond its tasks') is reported,
not dropped silently.

A multi-task job whose tasks carry their own minAvailable (Volcano's minTaskMember) gets, where
the cluster serves `scheduling.k8s.io/v1alpha3` CompositePodGroups, a composite gang instead: a
CompositePodGroup `<job>-<uid>` and one child PodGroup `<job>-<uid>-<task>` per task, each a gang
of that task's minAvailable, and all of them required (`minGroupCount` = the number of children).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.job.decide.podgen import child_metadata, joins_native_gang
from controller.job.decide.podgroup import job_min_available, task_min_available
from shared import labels
from shared.models import Job
from shared.wire import WireObject, conditions_of, dig, spec_of

API_VERSION: Final = "scheduling.k8s.io/v1beta1"
WORKLOAD_KIND: Final = "Workload"
PODGROUP_KIND: Final = "PodGroup"
# The alpha CompositePodGroup (gate CompositePodGroup): the tasks' PodGroups as one gang.
COMPOSITE_API_VERSION: Final = "scheduling.k8s.io/v1alpha3"
COMPOSITE_KIND: Final = "CompositePodGroup"
# The one pod group template of a job's Workload.
TEMPLATE_NAME: Final = "gang"
# kube-scheduler's condition on a PodGroup: True once the gang was placed (for good), False
# with reason Unschedulable or SchedulerError while it cannot be.
INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"
UNAVAILABLE_REASON: Final = "NativeGangUnavailable"
PARTIAL_REASON: Final = "NativeGangPartial"
UNAVAILABLE_MESSAGE: Final = (
    "the cluster does not serve scheduling.k8s.io/v1beta1 Workloads and PodGroups (Kubernetes "
    "1.37 with the GenericWorkload feature gate and that API enabled): kube-scheduler places "
    "the pods one by one, without a gang"
)


def scheduler_of(job: Job) -> str:
    return job.spec.scheduler_name or labels.DEFAULT_SCHEDULER


def applies(job: Job, native_schedulers: frozenset[str]) -> bool:
    """Whether the job's gang is kube-scheduler's (its scheduler is one of `native_schedulers`)."""
    return scheduler_of(job) in native_schedulers


def name_of(job: Job) -> str:
    return labels.pod_group_name(job.name, job.uid)


def min_count(job: Job) -> int:
    """The gang's size: the job's minAvailable (at least one pod: the API refuses zero)."""
    return max(1, job_min_available(job))


def _policy(job: Job) -> WireObject:
    return {"gang": {"minCount": min_count(job)}}


def _priority_class(job: Job, known_classes: Mapping[str, int]) -> dict[str, str]:
    """The job's priorityClassName when that class exists: kube-apiserver refuses a PodGroup
    naming one that does not, which would keep every pod of the job from being created."""
    name = job.spec.priority_class_name
    return {"priorityClassName": name} if name and name in known_classes else {}


def _controller_ref(job: Job) -> WireObject:
    return {
        "apiGroup": labels.BATCH_API_VERSION.split("/", 1)[0],
        "kind": labels.JOB_KIND,
        "name": job.name,
    }


def build_workload(job: Job, known_classes: Mapping[str, int]) -> WireObject:
    return {
        "apiVersion": API_VERSION,
        "kind": WORKLOAD_KIND,
        "metadata": child_metadata(job, name_of(job)),
        "spec": {
            "controllerRef": _controller_ref(job),
            "podGroupTemplates": [
                {
                    "name": TEMPLATE_NAME,
                    "schedulingPolicy": _policy(job),
                    **_priority_class(job, known_classes),
                }
            ],
        },
    }


def build_pod_group(job: Job, known_classes: Mapping[str, int]) -> WireObject:
    return {
        "apiVersion": API_VERSION,
        "kind": PODGROUP_KIND,
        "metadata": child_metadata(job, name_of(job)),
        "spec": {
            "workloadRef": {"workloadName": name_of(job), "templateName": TEMPLATE_NAME},
            "schedulingPolicy": _policy(job),
            **_priority_class(job, known_classes),
        },
    }


@dataclass(frozen=True)
class TaskGang:
    """One task's child PodGroup in a composite gang: `min_count` of its pods placed together."""

    task: str
    pod_group: str
    min_count: int


def task_pod_group_name(job: Job, task: str) -> str:
    # A DNS subdomain (253 characters): a job name (63), its uid (36) and a task name (63) fit.
    return f"{name_of(job)}-{task}"


def child_gangs(job: Job) -> list[TaskGang]:
    """A child gang for every task with a minAvailable of at least one whose pods join.

    A task whose minAvailable is 0 gets none: kube-scheduler's minGroupCount counts any child
    whose own quorum is placed, a basic-policy child as soon as one of its pods is, so such a child
    would either require a pod Volcano does not or stand in for another task's failed gang. Its
    pods join no PodGroup and are placed one by one.
    """
    return [
        TaskGang(str(t.name), task_pod_group_name(job, str(t.name)), task_min_available(t))
        for t in job.spec.tasks
        if task_min_available(t) >= 1 and joins_native_gang(spec_of(t.template), job)
    ]


def task_gangs(job: Job) -> list[TaskGang]:
    """The tasks' own gangs of a job whose gang is per task, else [] (one gang of the job's
    minAvailable says it all).

    Per task: more than one task, one of them needing fewer pods than its replicas, and the job's
    minAvailable at least the sum of the tasks'. Below that sum Volcano's scheduler checks only the
    job's count (CheckTaskReady), which the one PodGroup already says.
    """
    tasks = job.spec.tasks
    sizes = [task_min_available(t) for t in tasks]
    if len(tasks) < 2 or all(size >= t.replica_count for size, t in zip(sizes, tasks, strict=True)):
        return []
    if job_min_available(job) < sum(sizes):
        return []
    return child_gangs(job)


def composite_template_name(job: Job) -> str:
    """`gang`, unless a task holds that name: template names are unique across a Workload."""
    taken = {str(t.name) for t in job.spec.tasks}
    candidates = (TEMPLATE_NAME, *(f"{TEMPLATE_NAME}-{i}" for i in range(1, len(taken) + 1)))
    return next(name for name in candidates if name not in taken)


def _composite_policy(gangs: Sequence[TaskGang]) -> WireObject:
    # Every child: minGroupCount counts children, not which ones.
    return {"gang": {"minGroupCount": len(gangs)}}


def _task_policy(gang: TaskGang) -> WireObject:
    return {"gang": {"minCount": gang.min_count}}


def build_composite_workload(
    job: Job, gangs: Sequence[TaskGang], known_classes: Mapping[str, int]
) -> WireObject:
    # kube-apiserver wants one priority class on every template of a Workload.
    priority = _priority_class(job, known_classes)
    return {
        "apiVersion": API_VERSION,
        "kind": WORKLOAD_KIND,
        "metadata": child_metadata(job, name_of(job)),
        "spec": {
            "controllerRef": _controller_ref(job),
            "compositePodGroupTemplates": [
                {
                    "name": composite_template_name(job),
                    "schedulingPolicy": _composite_policy(gangs),
                    **priority,
                    "podGroupTemplates": [
                        {"name": g.task, "schedulingPolicy": _task_policy(g), **priority}
                        for g in gangs
                    ],
                }
            ],
        },
    }


def build_composite_pod_group(
    job: Job, gangs: Sequence[TaskGang], known_classes: Mapping[str, int]
) -> WireObject:
    # The priority class too: kube-scheduler gives the pods the root group's priority.
    return {
        "apiVersion": COMPOSITE_API_VERSION,
        "kind": COMPOSITE_KIND,
        "metadata": child_metadata(job, name_of(job)),
        "spec": {
            "workloadRef": {
                "workloadName": name_of(job),
                "templateName": composite_template_name(job),
            },
            "schedulingPolicy": _composite_policy(gangs),
            **_priority_class(job, known_classes),
        },
    }


def build_task_pod_group(job: Job, gang: TaskGang, known_classes: Mapping[str, int]) -> WireObject:
    return {
        "apiVersion": API_VERSION,
        "kind": PODGROUP_KIND,
        "metadata": child_metadata(job, gang.pod_group),
        "spec": {
            "parentCompositePodGroupName": name_of(job),
            "workloadRef": {"workloadName": name_of(job), "templateName": gang.task},
            "schedulingPolicy": _task_policy(gang),
            **_priority_class(job, known_classes),
        },
    }


def current_min_count(pod_group: Mapping[str, Any]) -> int | None:
    value = dig(pod_group, "spec", "schedulingPolicy", "gang", "minCount")
    return value if isinstance(value, int) else None


def resized(existing: WireObject, wanted: int) -> WireObject | None:
    """The existing PodGroup with its gang `wanted` pods large, or None when it already is."""
    wanted = max(1, wanted)
    if current_min_count(existing) == wanted:
        return None
    updated = copy.deepcopy(existing)
    updated.setdefault("spec", {})["schedulingPolicy"] = {"gang": {"minCount": wanted}}
    return updated


def updated_pod_group(existing: WireObject, job: Job) -> WireObject | None:
    """The existing PodGroup with the gang's size brought in line after a scale, or None."""
    return resized(existing, min_count(job))


def unexpressed(job: Job, gangs: Sequence[TaskGang] = ()) -> list[str]:
    """What of the job's gang kube-scheduler's objects do not carry: `gangs` are the tasks'
    gangs of a composite one, none for one PodGroup."""
    out: list[str] = []
    if gangs:
        expressed = sum(g.min_count for g in gangs)
        if job_min_available(job) > expressed:
            out.append(
                f"minAvailable {job_min_available(job)} beyond the tasks' own ({expressed} pods)"
            )
    elif task_gangs(job):
        per_task = [str(t.name) for t in job.spec.tasks if task_min_available(t) < t.replica_count]
        out.append(f"per-task minAvailable (tasks {', '.join(per_task)})")
    if job.spec.network_topology is not None:
        out.append("networkTopology")
    if any(t.partition_policy is not None for t in job.spec.tasks):
        out.append("partitionPolicy")
    return out


def gang_summary(job: Job, gangs: Sequence[TaskGang] = ()) -> str:
    """The gang kube-scheduler places, for the NativeGangPartial event."""
    if not gangs:
        return f"the job's minAvailable ({min_count(job)} pods)"
    return "its tasks' minAvailable (" + ", ".join(f"{g.task} {g.min_count}" for g in gangs) + ")"


@dataclass(frozen=True)
class GangState:
    """kube-scheduler's word on the gang: `scheduled` once placed, else why not."""

    scheduled: bool
    reason: str
    message: str


def gang_state(pod_group: Mapping[str, Any] | None) -> GangState | None:
    """The PodGroupInitiallyScheduled condition, or None while kube-scheduler has not set it."""
    for condition in conditions_of(pod_group):
        if condition.get("type") == INITIALLY_SCHEDULED:
            return GangState(
                scheduled=condition.get("status") == "True",
                reason=str(condition.get("reason") or ""),
                message=str(condition.get("message") or ""),
            )
    return None
