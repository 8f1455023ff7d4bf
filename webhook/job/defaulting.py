"""Defaults applied to a Job on CREATE (admission.md, "Defaults (CREATE)"), in the spec's order.

`default_job` works on a deep copy of the raw object and touches only fields that are absent,
so the mutation patch is the JSON Patch diff from the raw object to its defaulted form
(`mutation_patch`, jsonpatch on the parts that differ) and applying the defaults twice changes
nothing. Values of the wrong type are left alone for the validator to report.
"""

from __future__ import annotations

from typing import Any, TypeGuard

import jsonpatch

from shared import gang, labels, plugins


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def copy_json(value: Any) -> Any:
    """A deep copy of decoded JSON (dicts, lists, scalars); much cheaper than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def _absent(container: dict[str, Any], key: str) -> bool:
    """Absent, null or the empty string (Go's zero value for a string field)."""
    return container.get(key) in (None, "")


def _int_or_none(value: Any) -> int | None:
    return value if _is_int(value) else None


def _default_task(task: dict[str, Any], index: int) -> None:
    if _absent(task, "name"):
        task["name"] = f"{labels.DEFAULT_TASK_PREFIX}{index}"
    if task.get("minAvailable") is None:
        policy = task.get("partitionPolicy")
        policy = policy if isinstance(policy, dict) else {}
        min_partitions = _int_or_none(policy.get("minPartitions"))
        partition_size = _int_or_none(policy.get("partitionSize"))
        replicas = task.get("replicas", 0)
        # A negative count is left for the validator: copying it would only repeat the error.
        valid_replicas = _is_int(replicas) and replicas >= 0
        by_partitions = gang.partition_min_available(min_partitions, partition_size)
        if valid_replicas or by_partitions is not None:
            task["minAvailable"] = gang.task_min_available(
                replicas if valid_replicas else 0,
                min_replicas=_int_or_none(task.get("minReplicas")),
                min_partitions=min_partitions,
                partition_size=partition_size,
            )
    if task.get("maxRetry") is None:
        task["maxRetry"] = labels.DEFAULT_MAX_RETRY
    template = task.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    host_network = isinstance(pod_spec, dict) and pod_spec.get("hostNetwork") is True
    if host_network and isinstance(pod_spec, dict) and _absent(pod_spec, "dnsPolicy"):
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"


def _default_min_available(spec: dict[str, Any]) -> None:
    current = spec.get("minAvailable")
    if current is not None and current != 0:
        return
    tasks = spec.get("tasks")
    if not isinstance(tasks, list):
        return
    values = [t.get("minAvailable") for t in tasks if isinstance(t, dict)]
    sizes = [v for v in values if _is_int(v) and v >= 0]
    if len(sizes) != len(tasks):
        return
    spec["minAvailable"] = gang.job_min_available(None, sizes)


def _default_plugins(spec: dict[str, Any]) -> None:
    """The plugins the ones present bring along (frameworks need svc, mpi needs ssh), added in
    registry order when absent."""
    present = spec.get("plugins")
    if not isinstance(present, dict):
        return
    for descriptor in plugins.all_descriptors():
        if descriptor.name not in present:
            continue
        for implied in descriptor.implies:
            if implied not in present:
                present[implied] = []


def _task_copy(task: Any) -> Any:
    if not isinstance(task, dict):
        return task
    task = dict(task)
    template = task.get("template")
    if isinstance(template, dict):
        template = task["template"] = dict(template)
        if isinstance(template.get("spec"), dict):
            template["spec"] = dict(template["spec"])
    return task


def _path_copy(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of just the objects defaulting may change (the job, spec, tasks, each task, its
    template and pod spec, plugins); everything else is shared with `raw`."""
    job = dict(raw)
    spec = job.get("spec")
    if isinstance(spec, dict):
        spec = job["spec"] = dict(spec)
        if isinstance(spec.get("tasks"), list):
            spec["tasks"] = [_task_copy(t) for t in spec["tasks"]]
        if isinstance(spec.get("plugins"), dict):
            spec["plugins"] = dict(spec["plugins"])
    return job


def default_job(raw: dict[str, Any], scheduler_name: str) -> dict[str, Any]:
    """The Job with every CREATE default applied, as a deep copy; `raw` is never modified."""
    return _apply_defaults(copy_json(raw), scheduler_name)


def defaulted_view(raw: dict[str, Any], scheduler_name: str) -> dict[str, Any]:
    """The same values as `default_job`, sharing the unchanged parts (pod templates' contents,
    metadata, volumes…) with `raw`: for reading only, and much cheaper on the request path."""
    return _apply_defaults(_path_copy(raw), scheduler_name)


def _apply_defaults(job: dict[str, Any], scheduler_name: str) -> dict[str, Any]:
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return job
    if _absent(spec, "queue"):
        spec["queue"] = labels.DEFAULT_QUEUE
    if _absent(spec, "schedulerName"):
        spec["schedulerName"] = scheduler_name
    if spec.get("maxRetry") is None:
        spec["maxRetry"] = labels.DEFAULT_MAX_RETRY
    tasks = spec.get("tasks")
    if isinstance(tasks, list):
        for index, task in enumerate(tasks):
            if isinstance(task, dict):
                _default_task(task, index)
    _default_min_available(spec)
    _default_plugins(spec)
    _default_suspend(job, spec)
    return job


def _default_suspend(job: dict[str, Any], spec: dict[str, Any]) -> None:
    """A job Kueue queues (queue-name label) starts suspended: Kueue admits it (docs/kueue.md)."""
    metadata = job.get("metadata")
    job_labels = metadata.get("labels") if isinstance(metadata, dict) else None
    queued = isinstance(job_labels, dict) and job_labels.get(labels.KUEUE_QUEUE_NAME_KEY)
    if queued and spec.get("suspend") is None:
        spec["suspend"] = True


def _skeletons(old: Any, new: Any) -> tuple[Any, Any]:
    """`old` and `new` without the subtrees that are equal in both at the same place, so the
    diff only walks what changed. The patch is the same: jsonpatch emits nothing for equal
    values at equal paths. Lists of equal length become objects keyed by index: their JSON
    Pointers (`/spec/tasks/0/...`) are the same, and jsonpatch's list diff (a search for runs
    of changes, with copies) is by far its slowest part."""
    if isinstance(old, dict) and isinstance(new, dict):
        old_out: dict[str, Any] = {}
        new_out: dict[str, Any] = {}
        for key, value in old.items():
            if key in new:
                if value != new[key]:
                    old_out[key], new_out[key] = _skeletons(value, new[key])
            else:
                old_out[key] = value
        for key, value in new.items():
            if key not in old:
                new_out[key] = value
        return old_out, new_out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        old_items: dict[str, Any] = {}
        new_items: dict[str, Any] = {}
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                old_items[str(index)], new_items[str(index)] = _skeletons(a, b)
        return old_items, new_items
    return old, new


def diff(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch from `old` to `new` (jsonpatch's diff), computed on the parts that
    differ. Without `move` detection: defaults only ever add fields, and skipping the search
    makes the request path cheaper."""
    if old == new:
        return []
    skeleton_old, skeleton_new = _skeletons(old, new)
    patch: list[dict[str, Any]] = jsonpatch.JsonPatch.from_diff(
        skeleton_old, skeleton_new, optimization=False
    ).patch
    return patch


def mutation_patch(raw: dict[str, Any], scheduler_name: str) -> list[dict[str, Any]]:
    """The JSON Patch turning `raw` into its defaulted form (empty when nothing changes)."""
    return diff(raw, defaulted_view(raw, scheduler_name))
