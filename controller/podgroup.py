"""The job's PodGroup (`<job>-<uid>`): the gang the scheduler admits before pods are created."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from controller.podgen import child_metadata, queue_of
from shared import labels, quantity
from shared.models import Job, TaskSpec

WireObject = dict[str, Any]

ADMITTED_PHASES = frozenset({"Inqueue", "Running"})
SPEC_FIELDS = ("minMember", "minTaskMember", "queue", "priorityClassName", "minResources")


def task_min_available(task: TaskSpec) -> int:
    return task.min_available if task.min_available is not None else task.replica_count


def job_min_available(job: Job) -> int:
    """spec.minAvailable; the webhook always sets it, Σ task minAvailable otherwise."""
    if job.spec.min_available is not None:
        return job.spec.min_available
    return sum(task_min_available(t) for t in job.spec.tasks)


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def _style(raw: Any) -> str:
    """How a quantity was written: `binary` (Gi…), `decimal` (G…) or `plain`."""
    text = str(raw)
    if text.endswith("i"):
        return "binary"
    if text[-1:] in "kMGTPE" and text[-1:]:
        return "decimal"
    return "plain"


def _container_requests(
    container: Mapping[str, Any], styles: dict[str, str] | None = None
) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    amounts: dict[str, Decimal] = {}
    # Requests default to limits when only limits are given (API server defaulting).
    for source in (resources.get("limits") or {}, resources.get("requests") or {}):
        for name, raw in source.items():
            value = quantity.try_parse(raw)
            if value is not None:
                amounts[str(name)] = value
                if styles is not None:
                    styles.setdefault(str(name), _style(raw))
    return amounts


def pod_requests(task: TaskSpec, styles: dict[str, str] | None = None) -> dict[str, Decimal]:
    """A pod's resource usage as quota sees it: max(Σ containers, largest init container)."""
    spec = (task.template or {}).get("spec") or {}
    total = quantity.add_quantities(
        *(_container_requests(c, styles) for c in spec.get("containers") or [])
    )
    for init in spec.get("initContainers") or []:
        for name, value in _container_requests(init, styles).items():
            total[name] = max(total.get(name, Decimal(0)), value)
    return total


def _priority(task: TaskSpec, job: Job, priority_values: Mapping[str, int]) -> int:
    spec = (task.template or {}).get("spec") or {}
    name = spec.get("priorityClassName") or job.spec.priority_class_name
    return priority_values.get(str(name), 0) if name else 0


def _pods_counted(job: Job, priority_values: Mapping[str, int]) -> list[tuple[TaskSpec, int]]:
    """How many pods of each task make up the first `minAvailable`, higher priority first."""
    ordered = sorted(job.spec.tasks, key=lambda t: -_priority(t, job, priority_values))
    budget = job_min_available(job)
    taken = dict.fromkeys((id(t) for t in ordered), 0)
    if budget >= sum(task_min_available(t) for t in ordered):
        for task in ordered:
            taken[id(task)] = min(task_min_available(task), task.replica_count)
        budget -= sum(taken.values())
    for task in ordered:
        extra = max(0, min(task.replica_count - taken[id(task)], budget))
        taken[id(task)] += extra
        budget -= extra
    return [(t, taken[id(t)]) for t in ordered]


def render_quantity(value: Decimal, style: str = "plain") -> str:
    """Kubernetes-like canonical text, keeping the suffix family the user wrote (2Gi, 3G)."""
    if value == value.to_integral_value():
        units = _BINARY if style == "binary" else _DECIMAL if style == "decimal" else ()
        for suffix, unit in units:
            if value >= unit and value % unit == 0:
                return f"{int(value // unit)}{suffix}"
        return str(int(value))
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return str(value.normalize())


def min_resources(job: Job, priority_values: Mapping[str, int]) -> dict[str, str]:
    total: dict[str, Decimal] = {}
    styles: dict[str, str] = {}
    pods = 0
    for task, count in _pods_counted(job, priority_values):
        if count <= 0:
            continue
        pods += count
        for name, value in pod_requests(task, styles).items():
            total[name] = total.get(name, Decimal(0)) + value * count
    rendered = {
        name: render_quantity(value, styles.get(name, "plain"))
        for name, value in sorted(total.items())
    }
    rendered["pods"] = str(pods)
    return rendered


def desired_spec(job: Job, priority_values: Mapping[str, int]) -> WireObject:
    spec: WireObject = {
        "minMember": job_min_available(job),
        "minTaskMember": {str(t.name): task_min_available(t) for t in job.spec.tasks},
        "queue": queue_of(job),
        "minResources": min_resources(job, priority_values),
    }
    if job.spec.priority_class_name:
        spec["priorityClassName"] = job.spec.priority_class_name
    return spec


def build_pod_group(job: Job, priority_values: Mapping[str, int]) -> WireObject:
    meta = child_metadata(job, labels.pod_group_name(job.name, job.uid))
    meta["labels"] = {**(job.metadata.get("labels") or {}), **meta["labels"]}
    if job.metadata.get("annotations"):
        meta["annotations"] = dict(job.metadata["annotations"])
    return {
        "apiVersion": labels.SCHEDULING_API_VERSION,
        "kind": labels.PODGROUP_KIND,
        "metadata": meta,
        "spec": desired_spec(job, priority_values),
    }


def _normalised(spec: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: spec.get(k) for k in SPEC_FIELDS}
    resources = out.get("minResources") or {}
    out["minResources"] = {str(k): quantity.try_parse(v) for k, v in resources.items()}
    return out


def updated_pod_group(
    existing: WireObject, job: Job, priority_values: Mapping[str, int]
) -> WireObject | None:
    """The existing PodGroup with its spec fields brought in line, or None when they match."""
    desired = desired_spec(job, priority_values)
    current = existing.get("spec") or {}
    if _normalised(current) == _normalised(desired):
        return None
    updated = copy.deepcopy(existing)
    new_spec = dict(current)
    for key in SPEC_FIELDS:
        if key in desired:
            new_spec[key] = desired[key]
        else:
            new_spec.pop(key, None)
    updated["spec"] = new_spec
    return updated


def phase_of(pod_group: Mapping[str, Any] | None) -> str:
    return str(((pod_group or {}).get("status") or {}).get("phase") or "")


def is_admitted(pod_group: Mapping[str, Any] | None) -> bool:
    return phase_of(pod_group) in ADMITTED_PHASES


def task_names(tasks: Iterable[TaskSpec]) -> list[str]:
    return [str(t.name) for t in tasks]
