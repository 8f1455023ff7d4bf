"""Kubernetes' own gang (1.37, `scheduling.k8s.io/v1beta1`, feature gate GenericWorkload): for a
job whose scheduler is kube-scheduler, a Workload and a PodGroup that kube-scheduler places
all-or-nothing, and the pods joined to it by `spec.schedulingGroup.podGroupName`.

The Workload and the PodGroup are named as Volcano's PodGroup (`<job>-<uid>`), owned by the
job and created before its first pod. The gang is the job's `minAvailable`; what the API cannot
say of a Volcano Job (per-task minAvailable, network topology) is reported, not dropped silently.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controller.job.decide.podgen import child_metadata
from controller.job.decide.podgroup import job_min_available, task_min_available
from shared import labels
from shared.models import Job

WireObject = dict[str, Any]

API_VERSION: Final = "scheduling.k8s.io/v1beta1"
WORKLOAD_KIND: Final = "Workload"
PODGROUP_KIND: Final = "PodGroup"
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


def build_workload(job: Job, known_classes: Mapping[str, int]) -> WireObject:
    return {
        "apiVersion": API_VERSION,
        "kind": WORKLOAD_KIND,
        "metadata": child_metadata(job, name_of(job)),
        "spec": {
            "controllerRef": {
                "apiGroup": labels.BATCH_API_VERSION.split("/", 1)[0],
                "kind": labels.JOB_KIND,
                "name": job.name,
            },
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


def current_min_count(pod_group: Mapping[str, Any]) -> int | None:
    gang = ((pod_group.get("spec") or {}).get("schedulingPolicy") or {}).get("gang") or {}
    value = gang.get("minCount")
    return value if isinstance(value, int) else None


def updated_pod_group(existing: WireObject, job: Job) -> WireObject | None:
    """The existing PodGroup with the gang's size brought in line after a scale, or None."""
    wanted = min_count(job)
    if current_min_count(existing) == wanted:
        return None
    updated = copy.deepcopy(existing)
    updated.setdefault("spec", {})["schedulingPolicy"] = {"gang": {"minCount": wanted}}
    return updated


def unexpressed(job: Job) -> list[str]:
    """What of the job's gang kube-scheduler's PodGroup does not carry."""
    out: list[str] = []
    per_task = [
        str(t.name)
        for t in job.spec.tasks
        if t.min_available is not None and task_min_available(t) < t.replica_count
    ]
    if per_task and len(job.spec.tasks) > 1:
        out.append(f"per-task minAvailable (tasks {', '.join(per_task)})")
    if job.spec.network_topology is not None:
        out.append("networkTopology")
    if any(t.partition_policy is not None for t in job.spec.tasks):
        out.append("partitionPolicy")
    return out


@dataclass(frozen=True)
class GangState:
    """kube-scheduler's word on the gang: `scheduled` once placed, else why not."""

    scheduled: bool
    reason: str
    message: str


def gang_state(pod_group: Mapping[str, Any] | None) -> GangState | None:
    """The PodGroupInitiallyScheduled condition, or None while kube-scheduler has not set it."""
    for condition in ((pod_group or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == INITIALLY_SCHEDULED:
            return GangState(
                scheduled=condition.get("status") == "True",
                reason=str(condition.get("reason") or ""),
                message=str(condition.get("message") or ""),
            )
    return None
