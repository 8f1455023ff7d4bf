"""The job's PodGroup (`<job>-<uid>`): the gang the scheduler admits before pods are created."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from controller.job.decide.podgen import child_metadata, queue_of
from shared import gang, labels, podresources, quantity
from shared.models import Job, TaskSpec
from shared.models.job import PARTITION_ID_LABEL, NetworkTopology
from shared.wire import WireObject, conditions_of, spec_of, status_phase

# Volcano's job controller creates pods once the PodGroup is past Pending: a gang gone Unknown
# gets its missing pods back, so that it can run again.
ADMITTED_PHASES = frozenset({"Inqueue", "Running", "Unknown", "Completed"})
# Kept in line on every sync; `networkTopology` is set at creation only, as Volcano does.
SPEC_FIELDS = (
    "minMember",
    "minTaskMember",
    "queue",
    "priorityClassName",
    "minResources",
    "subGroupPolicy",
)
# Resources whose limits count in quota usage (`limits.<name>`).
_LIMITED = ("cpu", "memory", "ephemeral-storage")
SCHEDULED = "Scheduled"


def task_min_available(task: TaskSpec) -> int:
    """The task's gang size (`shared.gang.task_min_available`)."""
    policy = task.partition_policy
    return gang.task_min_available(
        task.replica_count,
        min_available=task.min_available,
        min_replicas=task.min_replicas,
        min_partitions=policy.min_partitions if policy is not None else None,
        partition_size=policy.partition_size if policy is not None else None,
    )


def job_min_available(job: Job) -> int:
    """spec.minAvailable; the webhook always sets it, Σ task minAvailable otherwise."""
    return gang.job_min_available(
        job.spec.min_available, (task_min_available(t) for t in job.spec.tasks)
    )


def _container_amounts(
    container: Mapping[str, Any], styles: dict[str, str] | None, *, limits: bool
) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    # Requests default to limits when only limits are given (API server defaulting).
    sources = (
        (resources.get("limits") or {},)
        if limits
        else (resources.get("limits") or {}, resources.get("requests") or {})
    )
    amounts: dict[str, Decimal] = {}
    for source in sources:
        for name, raw in source.items():
            value = quantity.try_parse(raw)
            if value is not None:
                amounts[str(name)] = value
                if styles is not None:
                    styles.setdefault(str(name), quantity.suffix_style(raw))
    return amounts


def _pod_amounts(
    spec: Mapping[str, Any], styles: dict[str, str] | None = None, *, limits: bool = False
) -> dict[str, Decimal]:
    total = quantity.add_quantities(
        *(_container_amounts(c, styles, limits=limits) for c in spec.get("containers") or [])
    )
    for init in spec.get("initContainers") or []:
        for name, value in _container_amounts(init, styles, limits=limits).items():
            total[name] = max(total.get(name, Decimal(0)), value)
    # Pod-level resources (Kubernetes >= 1.34) replace the containers' sum for what they name,
    # as Kubernetes' PodRequests counts them; a pod-level limit alone is also the request.
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping):
        kinds = ("limits",) if limits else ("limits", "requests")
        for kind in kinds:
            for name, raw in (pod_level.get(kind) or {}).items():
                amount = quantity.try_parse(raw)
                if amount is not None and podresources.supported_at_pod_level(str(name)):
                    total[str(name)] = amount
                    if styles is not None:
                        styles.setdefault(str(name), quantity.suffix_style(raw))
    return total


def _template_spec(task: TaskSpec) -> Mapping[str, Any]:
    return spec_of(task.template)


def pod_requests(task: TaskSpec, styles: dict[str, str] | None = None) -> dict[str, Decimal]:
    """A pod's requests as quota sees them: max(Σ containers, largest init container)."""
    return _pod_amounts(_template_spec(task), styles)


def pod_spec_usage(
    spec: Mapping[str, Any], styles: dict[str, str] | None = None
) -> dict[str, Decimal]:
    """One pod's quota usage under the keys Volcano writes into `minResources`: `count/pods`
    and `pods`; every request as its bare name and `requests.<name>`; `limits.<name>` for
    cpu, memory and ephemeral-storage. For a job's tasks and for plain workloads' pods alike."""
    usage: dict[str, Decimal] = {"count/pods": Decimal(1), "pods": Decimal(1)}
    for name, value in _pod_amounts(spec, styles).items():
        usage[name] = value
        usage[f"requests.{name}"] = value
    for name, value in _pod_amounts(spec, styles, limits=True).items():
        if name in _LIMITED:
            usage[f"limits.{name}"] = value
    return usage


def pod_usage(task: TaskSpec, styles: dict[str, str] | None = None) -> dict[str, Decimal]:
    """`pod_spec_usage` of one pod of the task."""
    return pod_spec_usage(_template_spec(task), styles)


def _priority(task: TaskSpec, job: Job, priority_values: Mapping[str, int]) -> int:
    name = _template_spec(task).get("priorityClassName") or job.spec.priority_class_name
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


def _base_name(key: str) -> str:
    return key.split(".", 1)[1] if key.startswith(("requests.", "limits.")) else key


def min_resources(job: Job, priority_values: Mapping[str, int]) -> dict[str, str]:
    """Σ pod usage over the pods the gang needs first (see `_pods_counted`), Volcano's keys."""
    total: dict[str, Decimal] = {"count/pods": Decimal(0), "pods": Decimal(0)}
    styles: dict[str, str] = {}
    for task, count in _pods_counted(job, priority_values):
        if count <= 0:
            continue
        for name, value in pod_usage(task, styles).items():
            total[name] = total.get(name, Decimal(0)) + value * count
    return {
        name: quantity.render(value, styles.get(_base_name(name), "plain"))
        for name, value in sorted(total.items())
    }


def network_topology(raw: NetworkTopology | None) -> WireObject | None:
    """Volcano's copy of a NetworkTopologySpec: mode, then the tier number if set, otherwise the
    tier name."""
    if raw is None:
        return None
    spec = raw.to_wire()
    out: WireObject = {"mode": spec.get("mode") or "hard"}
    if spec.get("highestTierAllowed") is not None:
        out["highestTierAllowed"] = spec["highestTierAllowed"]
    elif spec.get("highestTierName"):
        out["highestTierName"] = spec["highestTierName"]
    return out


def sub_group_policy(job: Job) -> list[WireObject]:
    """One entry per partitioned task, in task order."""
    out: list[WireObject] = []
    for task in job.spec.tasks:
        policy = task.partition_policy
        if policy is None:
            continue
        entry: WireObject = {"name": str(task.name)}
        # A size the webhook would have refused is left to the CRD default (1), so that the
        # PodGroup can still be written.
        if (policy.partition_size or 0) > 0:
            entry["subGroupSize"] = policy.partition_size
        entry["minSubGroups"] = max(policy.min_partitions or 0, 0)
        entry["labelSelector"] = {"matchLabels": {labels.TASK_SPEC_KEY: str(task.name)}}
        entry["matchLabelKeys"] = [PARTITION_ID_LABEL]
        topology = network_topology(policy.network_topology)
        if topology is not None:
            entry["networkTopology"] = topology
        out.append(entry)
    return out


def desired_spec(job: Job, priority_values: Mapping[str, int]) -> WireObject:
    spec: WireObject = {
        "minMember": job_min_available(job),
        "minTaskMember": {str(t.name): task_min_available(t) for t in job.spec.tasks},
        "queue": queue_of(job),
        "minResources": min_resources(job, priority_values),
    }
    if job.spec.priority_class_name:
        spec["priorityClassName"] = job.spec.priority_class_name
    groups = sub_group_policy(job)
    if groups:
        spec["subGroupPolicy"] = groups
    return spec


def build_pod_group(job: Job, priority_values: Mapping[str, int]) -> WireObject:
    meta = child_metadata(job, labels.pod_group_name(job.name, job.uid))
    meta["labels"] = {**(job.metadata.get("labels") or {}), **meta["labels"]}
    if job.metadata.get("annotations"):
        meta["annotations"] = dict(job.metadata["annotations"])
    spec = desired_spec(job, priority_values)
    topology = network_topology(job.spec.network_topology)
    if topology is not None:
        spec["networkTopology"] = topology
    return {
        "apiVersion": labels.SCHEDULING_API_VERSION,
        "kind": labels.PODGROUP_KIND,
        "metadata": meta,
        "spec": spec,
    }


def _normalised(spec: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: spec.get(k) for k in SPEC_FIELDS}
    resources = out.get("minResources") or {}
    out["minResources"] = {str(k): quantity.try_parse(v) for k, v in resources.items()}
    return out


def updated_pod_group(existing: WireObject, desired: Mapping[str, Any]) -> WireObject | None:
    """The existing PodGroup with its spec fields brought in line with `desired` (`desired_spec`),
    or None when they match."""
    current = spec_of(existing)
    if _normalised(current) == _normalised(desired):
        return None
    updated = copy.deepcopy(existing)
    new_spec = dict(current)
    for key in SPEC_FIELDS:
        if key in desired:
            new_spec[key] = copy.deepcopy(desired[key])
        else:
            new_spec.pop(key, None)
    updated["spec"] = new_spec
    return updated


def pending_warning(job: Job, pod_group: Mapping[str, Any] | None) -> str | None:
    """Volcano's `PodGroupPending` message while the PodGroup's latest True condition (by
    lastTransitionTime) is not `Scheduled`; None when there is nothing to relay."""
    conditions = [c for c in conditions_of(pod_group) if c.get("status") == "True"]
    if not conditions:
        return None
    latest = max(conditions, key=lambda c: str(c.get("lastTransitionTime") or ""))
    if latest.get("type") == SCHEDULED:
        return None
    kind = str(latest.get("type") or "").lower()
    return f"PodGroup {job.namespace}:{job.name} {kind}, reason: {latest.get('message') or ''}"


def phase_of(pod_group: Mapping[str, Any] | None) -> str:
    return status_phase(pod_group)


def is_admitted(pod_group: Mapping[str, Any] | None) -> bool:
    return phase_of(pod_group) in ADMITTED_PHASES


def task_names(tasks: Iterable[TaskSpec]) -> list[str]:
    return [str(t.name) for t in tasks]
