"""Building a task's pod from its template: names, labels, annotations, owner, volumes, plugins.

The template stays a dict and is deep-copied, so fields vcjob does not model are kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from shared import jsoncodec, labels
from shared.models import Job, TaskSpec
from shared.models.job import PARTITION_ID_LABEL
from shared.wire import WireObject, annotations_of, labels_of, metadata, spec_of

# Job keys Volcano copies onto pods for its scheduler plugins, after the template's own keys so
# the job's value wins: these go label → label and annotation → annotation …
_INHERITED_KEYS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")
# … these annotation → annotation only (`volcano.sh/jdb-*` by prefix).
_INHERITED_ANNOTATIONS = ("volcano.sh/revocable-zone",)
_INHERITED_ANNOTATION_PREFIX = "volcano.sh/jdb-"
# Set on jobs of a Queue with extendClusters; their pods carry it as label and annotation.
FORWARDING_KEY = "volcano.sh/job-forwarding"
NUMA_POLICY_KEY = "volcano.sh/numa-topology-policy"
# Template metadata the API server owns; a template must not carry them into a pod.
_SERVER_METADATA = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "ownerReferences",
    "managedFields",
)


class PodPlugin(Protocol):
    name: str

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None: ...


@dataclass(frozen=True)
class PodContext:
    """What every pod of one reconcile shares."""

    job: Job
    version: int
    retry_count: int
    pod_group: str
    # (mountPath, claimName) for every job volume whose PVC is known.
    claims: Sequence[tuple[str, str]]
    plugins: Sequence[PodPlugin]
    # The job's attempt (`status.attempts`), on every pod so the logs of attempts differ.
    attempt: int = 0
    # Kubernetes' own PodGroup each task's pods join, by task (`controller.job.decide.nativegang`).
    native_pod_groups: Mapping[str, str] = field(default_factory=dict)


def owner_reference(job: Job) -> WireObject:
    return {
        "apiVersion": labels.BATCH_API_VERSION,
        "kind": labels.JOB_KIND,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def job_labels(job: Job) -> dict[str, str]:
    return {labels.JOB_NAME_KEY: job.name, labels.JOB_NAMESPACE_KEY: job.namespace}


def child_metadata(job: Job, name: str) -> WireObject:
    """Metadata of a plugin, volume or scheduling child: job labels and the controller ref."""
    return {
        "name": name,
        "namespace": job.namespace,
        "labels": job_labels(job),
        "ownerReferences": [owner_reference(job)],
    }


def queue_of(job: Job) -> str:
    return job.spec.queue or labels.DEFAULT_QUEUE


def containers(spec: WireObject, *, init: bool = True) -> Iterable[WireObject]:
    yield from spec.get("containers") or []
    if init:
        yield from spec.get("initContainers") or []


def set_env(container: WireObject, name: str, value: str | None = None, **source: Any) -> None:
    """Add an env var unless the container already sets one of that name (the template wins)."""
    env = container.setdefault("env", [])
    if any(e.get("name") == name for e in env):
        return
    entry: WireObject = {"name": name}
    if source:
        entry.update(source)
    else:
        entry["value"] = value if value is not None else ""
    env.append(entry)


def add_volume(spec: WireObject, volume: WireObject) -> None:
    volumes = spec.setdefault("volumes", [])
    if not any(v.get("name") == volume["name"] for v in volumes):
        volumes.append(volume)


def add_mount(container: WireObject, mount: WireObject) -> None:
    mounts = container.setdefault("volumeMounts", [])
    if not any(m.get("mountPath") == mount["mountPath"] for m in mounts):
        mounts.append(mount)


def add_port(container: WireObject, name: str, port: int) -> None:
    ports = container.setdefault("ports", [])
    if not any(p.get("name") == name or p.get("containerPort") == port for p in ports):
        ports.append({"name": name, "containerPort": port})


def inherited_labels(job: Job) -> dict[str, str]:
    """The job labels Volcano propagates to its pods (preemptable, cooldown-time), and
    `volcano.sh/job-forwarding` when the job is annotated for a multi-cluster queue."""
    source = job.metadata.get("labels") or {}
    out = {k: str(source[k]) for k in _INHERITED_KEYS if k in source}
    if FORWARDING_KEY in (job.metadata.get("annotations") or {}):
        out[FORWARDING_KEY] = "true"
    return out


def inherited_annotations(job: Job) -> dict[str, str]:
    """The job annotations Volcano propagates to its pods."""
    source = job.metadata.get("annotations") or {}
    return {
        str(k): str(v)
        for k, v in source.items()
        if k in _INHERITED_KEYS
        or k in _INHERITED_ANNOTATIONS
        or k == FORWARDING_KEY
        or str(k).startswith(_INHERITED_ANNOTATION_PREFIX)
    }


def partition_id(task: TaskSpec, index: int) -> str | None:
    """`volcano.sh/partition-id` of a partitioned task's pod: index // partitionSize."""
    policy = task.partition_policy
    if policy is None:
        return None
    size = policy.partition_size or 0
    return str(index // size) if size > 0 else "0"


_NAME_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
# A pod volume's name is a DNS label: at most 63 characters, 13 of them `-<suffix>`.
_VOLUME_JOB_PREFIX = 63 - 13


def name_suffix(seed: str, length: int = 12) -> str:
    """`length` characters of [0-9a-z] derived from `seed`: they look like Volcano's random
    suffixes but come out the same on every reconcile, so nothing is created twice."""
    digest = int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big")
    suffix = ""
    for _ in range(length):
        digest, rest = divmod(digest, len(_NAME_ALPHABET))
        suffix += _NAME_ALPHABET[rest]
    return suffix


def claim_volume_name(job_name: str, claim: str) -> str:
    """The pod volume that mounts a job volume's PVC: `<job>-<12 [0-9a-z]>`, as Volcano names it
    (the job name cut so the whole stays a DNS label); one name per claim, the same in every pod."""
    prefix = job_name[:_VOLUME_JOB_PREFIX].rstrip("-.")
    return f"{prefix}-{name_suffix(claim)}"


def joins_native_gang(pod_spec: Mapping[str, Any], job: Job) -> bool:
    """Whether a pod (or a task's template) joins the job's native gang: only pods of the job's
    own scheduler (a task template may name another) and never over a `schedulingGroup` the
    template set."""
    job_scheduler = job.spec.scheduler_name or labels.DEFAULT_SCHEDULER
    return (
        not pod_spec.get("schedulingGroup")
        and (pod_spec.get("schedulerName") or job_scheduler) == job_scheduler
    )


def build_pod(ctx: PodContext, task: TaskSpec, index: int) -> WireObject:
    job = ctx.job
    task_name = str(task.name)
    template = jsoncodec.copy_tree(task.template or {})
    meta: WireObject = dict(metadata(template))
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    spec: WireObject = dict(spec_of(template))
    name = labels.pod_name(job.name, task_name, index)
    queue = queue_of(job)

    pod_labels, pod_annotations = labels_of(template), annotations_of(template)
    pod_labels.update(inherited_labels(job))
    pod_annotations.update(inherited_annotations(job))
    partition = partition_id(task, index)
    if partition is not None:
        pod_labels[PARTITION_ID_LABEL] = partition
    pod_labels.update(
        {
            labels.JOB_NAME_KEY: job.name,
            labels.JOB_NAMESPACE_KEY: job.namespace,
            labels.TASK_SPEC_KEY: task_name,
            labels.TASK_INDEX_KEY: str(index),
            labels.QUEUE_NAME_KEY: queue,
        }
    )
    pod_annotations.update(
        {
            labels.TASK_SPEC_KEY: task_name,
            labels.TASK_INDEX_KEY: str(index),
            labels.JOB_NAME_KEY: job.name,
            labels.QUEUE_NAME_KEY: queue,
            labels.JOB_VERSION_KEY: str(ctx.version),
            labels.JOB_RETRY_COUNT_KEY: str(ctx.retry_count),
            labels.ATTEMPT_KEY: str(ctx.attempt),
            labels.TEMPLATE_UID_KEY: labels.template_uid(job.name, task_name),
            labels.POD_GROUP_KEY: ctx.pod_group,
        }
    )
    if task.topology_policy:
        pod_annotations[NUMA_POLICY_KEY] = task.topology_policy
    meta.update(
        {
            "name": name,
            "namespace": job.namespace,
            "labels": pod_labels,
            "annotations": pod_annotations,
            "ownerReferences": [owner_reference(job)],
        }
    )

    if not spec.get("schedulerName") and job.spec.scheduler_name:
        spec["schedulerName"] = job.spec.scheduler_name
    if not spec.get("priorityClassName") and job.spec.priority_class_name:
        spec["priorityClassName"] = job.spec.priority_class_name
    native_pod_group = ctx.native_pod_groups.get(task_name)
    if native_pod_group is not None and joins_native_gang(spec, job):
        spec["schedulingGroup"] = {"podGroupName": native_pod_group}

    seen_claims: set[str] = set()
    for mount_path, claim in ctx.claims:
        if claim in seen_claims:
            continue
        seen_claims.add(claim)
        volume_name = claim_volume_name(job.name, claim)
        add_volume(spec, {"name": volume_name, "persistentVolumeClaim": {"claimName": claim}})
        # Only the main containers, as Volcano: init containers keep their own volumes.
        for container in containers(spec, init=False):
            add_mount(container, {"name": volume_name, "mountPath": mount_path})

    pod: WireObject = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    for plugin in ctx.plugins:
        plugin.on_pod(pod, task, index)
    # After Volcano's own variables, which keep their order.
    for container in containers(spec):
        set_env(container, labels.ATTEMPT_ENV, str(ctx.attempt))
    return pod
