"""What the elastic autoscaler reads of the cluster: wire dicts (Jobs, Nodes, Pods) turned into
frozen views, and the annotation that records when each task was last resized."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from controller.elastic.decide.resources import Resources, parse_amounts, pod_spec_amounts
from shared import gang, labels
from shared.models import Job
from shared.wire import (
    annotations_of,
    conditions_of,
    creation_timestamp,
    deletion_timestamp,
    job_state,
    labels_of,
    metadata,
    name_of,
    namespace_of,
    pod_phase,
    spec_of,
    status_of,
)

FINISHED_POD_PHASES: Final = frozenset({"Succeeded", "Failed"})


#: On a Job: `{"<task>": "<RFC 3339 time>"}`, when the autoscaler last changed each task's replicas.
RESIZED_AT_KEY: Final = "elastic.vcjob.volcano.sh/resized-at"


@dataclass(frozen=True)
class TaskView:
    """One task of a job; `requests`/`limits` are those of one instance (pod) of it."""

    name: str
    replicas: int
    min_replicas: int | None = None
    max_replicas: int | None = None
    min_available: int | None = None
    requests: Resources = field(default_factory=dict)
    limits: Resources = field(default_factory=dict)
    resized_at: datetime | None = None  # when the autoscaler last changed its replicas
    # partitionPolicy's minPartitions and partitionSize: a partitioned task's gang size
    min_partitions: int | None = None
    partition_size: int | None = None

    @property
    def is_elastic(self) -> bool:
        return (
            self.min_replicas is not None
            and self.max_replicas is not None
            and self.min_replicas < self.max_replicas
        )

    @property
    def minimum(self) -> int:
        """Instances the task needs before its job can run."""
        if self.is_elastic and self.min_replicas is not None:
            wanted = self.min_replicas
        else:
            wanted = gang.task_min_available(
                self.replicas,
                min_available=self.min_available,
                min_partitions=self.min_partitions,
                partition_size=self.partition_size,
            )
        return max(0, min(wanted, self.replicas))


@dataclass(frozen=True)
class ElasticJobView:
    namespace: str
    name: str
    phase: str
    tasks: tuple[TaskView, ...]
    min_available: int | None = None
    created: str = ""

    @property
    def minimum(self) -> int:
        """Pods that must run for the job to run (its gang size)."""
        return gang.job_min_available(self.min_available, (task.minimum for task in self.tasks))


@dataclass(frozen=True)
class NodeView:
    name: str
    allocatable: Resources
    schedulable: bool = True


@dataclass(frozen=True)
class PodView:
    namespace: str
    name: str
    phase: str
    requests: Resources = field(default_factory=dict)
    limits: Resources = field(default_factory=dict)
    job: str = ""
    task: str = ""
    index: int | None = None
    terminating: bool = False

    @property
    def active(self) -> bool:
        """Holds (or will hold) node resources: neither finished nor on its way out."""
        return self.phase not in FINISHED_POD_PHASES and not self.terminating


def resized_at_from_annotations(annotations: Mapping[str, Any]) -> dict[str, datetime]:
    """The RESIZED_AT_KEY annotation: task name → aware time; what does not parse is left out
    (the task then counts as not resized lately)."""
    try:
        raw = json.loads(str(annotations.get(RESIZED_AT_KEY) or "{}"))
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    parsed: dict[str, datetime] = {}
    for task, value in raw.items():
        try:
            at = datetime.fromisoformat(str(value))
        except ValueError:
            continue
        if at.tzinfo is not None:
            parsed[str(task)] = at
    return parsed


def resized_at_annotation(previous: Mapping[str, datetime], task: str, at: datetime) -> str:
    """The RESIZED_AT_KEY value after `task` was resized `at` (other tasks' times kept)."""
    merged = {**previous, task: at}
    return json.dumps(
        {name: when.isoformat().replace("+00:00", "Z") for name, when in sorted(merged.items())},
        separators=(",", ":"),
    )


def job_phase(job: Mapping[str, Any]) -> str | None:
    """`status.state.phase` of a Job dict, None before the controller has set one."""
    phase = job_state(job).get("phase")
    return str(phase) if phase else None


def job_view_from_wire(job: Mapping[str, Any]) -> ElasticJobView:
    """The view of a batch.volcano.sh Job dict; raises ValueError naming the job when malformed."""
    meta = metadata(job)
    key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    try:
        model = Job.from_wire(job)
    except ValidationError as exc:
        raise ValueError(f"job {key} cannot be read: {exc}") from exc
    resized = resized_at_from_annotations(annotations_of(job))
    tasks = []
    for index, task in enumerate(model.spec.tasks):
        pod_spec = spec_of(task.template)
        name = task.name or f"{labels.DEFAULT_TASK_PREFIX}{index}"
        partition = task.partition_policy
        tasks.append(
            TaskView(
                name=name,
                replicas=task.replica_count,
                min_replicas=task.min_replicas,
                max_replicas=task.max_replicas,
                min_available=task.min_available,
                requests=pod_spec_amounts(pod_spec, "requests"),
                limits=pod_spec_amounts(pod_spec, "limits"),
                resized_at=resized.get(name),
                min_partitions=partition.min_partitions if partition is not None else None,
                partition_size=partition.partition_size if partition is not None else None,
            )
        )
    phase = (model.status.state.phase if model.status else None) or ""
    return ElasticJobView(
        namespace=model.namespace,
        name=model.name,
        phase=phase,
        tasks=tuple(tasks),
        min_available=model.spec.min_available,
        created=creation_timestamp(job) or "",
    )


def node_view_from_wire(node: Mapping[str, Any]) -> NodeView:
    status = status_of(node)
    ready = all(
        c.get("status") == "True" for c in conditions_of(node) if c.get("type") == "Ready"
    )  # a node that reports no Ready condition yet is taken at its word
    return NodeView(
        name=name_of(node),
        allocatable=parse_amounts(status.get("allocatable") or status.get("capacity")),
        schedulable=ready and not spec_of(node).get("unschedulable", False),
    )


def pod_view_from_wire(pod: Mapping[str, Any]) -> PodView:
    pod_labels, annotations, spec = labels_of(pod), annotations_of(pod), spec_of(pod)

    def tag(key: str) -> str:
        return str(pod_labels.get(key) or annotations.get(key) or "")

    try:
        index: int | None = int(tag(labels.TASK_INDEX_KEY))
    except ValueError:
        index = None
    namespace = namespace_of(pod)
    return PodView(
        namespace=namespace,
        name=name_of(pod),
        phase=pod_phase(pod),
        requests=pod_spec_amounts(spec, "requests"),
        limits=pod_spec_amounts(spec, "limits"),
        job=tag(labels.JOB_NAME_KEY),
        task=tag(labels.TASK_SPEC_KEY),
        index=index,
        terminating=deletion_timestamp(pod) is not None,
    )
