"""Validation of Jobs on CREATE and UPDATE (admission.md, api.md success policy, elastic.md).

Pure functions: every rule runs and every failure is returned as a FieldError with its
Kubernetes field path, sorted in the order the fields appear in the object. The object is
judged as it would be after defaulting. Values of the wrong type never raise: the pydantic
models read the object, their errors become field errors, the unreadable values are set aside,
and the semantic rules run on what could be read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from pydantic import ValidationError

from shared import indexranges, names, pluginargs, quantity
from shared import plugins as registry
from shared.duration import parse_duration
from shared.fielderrors import FieldError, Path
from shared.models import (
    FINISHED_PHASES,
    TOPOLOGY_POLICIES,
    Job,
    LifecyclePolicy,
    PolicyAction,
    PolicyEvent,
    Queue,
    TaskSpec,
)
from shared.models.job import NetworkTopology
from shared.plugins import PluginCheck
from webhook import jobcontrol, memo, podtemplate
from webhook.defaulting import copy_json, defaulted_view
from webhook.rules import lifecycle, wording
from webhook.settings import Settings

SPEC: Final = Path.of("spec")
TASKS: Final = SPEC.child("tasks")
EVENTS: Final = tuple(e.value for e in PolicyEvent)
ACTIONS: Final = tuple(a.value for a in PolicyAction)
ITERATIONS: Final = ("any", "all")
# Placeholder length of the random suffix the API server appends to metadata.generateName.
GENERATED_SUFFIX: Final = "x" * 5
# Fields of `spec` that may change on UPDATE (admission.md, "Validation on UPDATE").
# suspend is mutable; managedBy's own rule is in webhook.jobcontrol.
MUTABLE_JOB_FIELDS: Final = ("minAvailable", "priorityClassName", "suspend", "managedBy")
MUTABLE_TASK_FIELDS: Final = ("replicas", "minAvailable", "minReplicas", "maxReplicas")
# Keys whose values are resource quantities: compared by value on UPDATE.
QUANTITY_MAPS: Final = frozenset({"limits", "requests", "overhead", "capacity", "minResources"})
_PATH_TOKEN: Final = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


class QueueView(Protocol):
    """Read access to the Queues the webhook has cached."""

    def get(self, name: str) -> Queue | None: ...

    def children(self, name: str) -> list[str]:
        """Names of the queues whose spec.parent is `name`."""
        ...


# ---------------------------------------------------------------------------------------------
# Reading the object


def _shown(value: Any) -> Any:
    """A value fit for an error message: no nested objects, no huge strings."""
    if isinstance(value, dict):
        return "<object>"
    if isinstance(value, list):
        return "<list>"
    if isinstance(value, str) and len(value) > 120:
        return value[:117] + "..."
    return value


def _loc_path(loc: Sequence[str | int]) -> Path:
    path = Path()
    previous: str | int | None = None
    for part in loc:
        if isinstance(part, int):
            path = path.index(part)
        elif part == "[key]":
            break
        elif previous == "plugins" and len(path.parts) == 2:
            path = path.key(part)
        else:
            path = path.child(part)
        previous = part
    return path


def _pydantic_error(error: Any, path: Path) -> FieldError:
    kind: str = error["type"]
    value = error.get("input")
    ctx: dict[str, Any] = error.get("ctx") or {}
    simple = {
        "int_type": "must be an integer",
        "int_parsing": "must be an integer",
        "int_from_float": "must be an integer",
        "string_type": "must be a string",
        "bool_type": "must be a boolean",
        "list_type": "must be a list",
        "dict_type": "must be an object",
        "model_type": "must be an object",
        "model_attributes_type": "must be an object",
    }
    if kind == "missing":
        return FieldError.required(path)
    if kind in simple:
        return FieldError.invalid(path, _shown(value), simple[kind])
    if kind == "greater_than_equal":
        return FieldError.invalid(path, value, f"should be greater than or equal to {ctx['ge']}")
    if kind == "greater_than":
        return FieldError.invalid(path, value, f"must be greater than {ctx['gt']}")
    if kind == "less_than_equal":
        return FieldError.invalid(path, value, f"must be less than or equal to {ctx['le']}")
    if kind == "string_too_long":
        return FieldError.too_long(path, int(ctx["max_length"]))
    if kind == "too_long":
        return FieldError.too_many(path, int(ctx["actual_length"]), int(ctx["max_length"]))
    if kind == "too_short":
        if str(path).endswith("successPolicy.rules"):
            return FieldError.required(
                path, "at least one rule must be specified when the successPolicy is specified"
            )
        return FieldError.required(path, f"must have at least {ctx['min_length']} items")
    return FieldError.invalid(path, _shown(value), str(error.get("msg", "is not valid")))


def _set_aside(data: Any, loc: Sequence[str | int], missing: bool) -> None:
    """Remove the unreadable value at `loc` so the rest of the object can be read; list items
    become empty objects so that indexes (and so field paths) stay the same."""
    parent = data
    for part in loc[:-1]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return
    last = loc[-1] if loc else None
    if isinstance(parent, dict) and isinstance(last, str):
        if missing:
            parent[last] = ""
        else:
            parent.pop(last, None)
    elif isinstance(parent, list) and isinstance(last, int) and last < len(parent):
        parent[last] = {}


@dataclass
class Reading:
    """A Job read from a raw object: the model (None when unreadable), the errors met while
    reading, and the field paths whose values were set aside."""

    job: Job | None
    errors: list[FieldError] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)

    def readable(self, path: Path) -> bool:
        """False when the value at `path`, or a value containing it, could not be read."""
        if not self.broken:
            return True
        text = str(path)
        return not any(text == b or text.startswith((b + ".", b + "[")) for b in self.broken)


def read_job(raw: Any) -> Reading:
    """Read a raw Job (status is ignored: it never reaches admission)."""
    if not isinstance(raw, dict):
        return Reading(None, [FieldError.invalid(Path(), _shown(raw), "must be a Job object")])
    # pydantic does not modify its input: copy only once values must be set aside.
    data = {k: v for k, v in raw.items() if k != "status"}
    copied = False
    reading = Reading(None)
    for _ in range(4):
        try:
            reading.job = Job.model_validate(data, strict=True, by_alias=True, by_name=False)
        except ValidationError as exc:
            if not copied:
                data, copied = copy_json(data), True
            for error in exc.errors(include_url=False):
                loc = tuple(error["loc"])
                path = _loc_path(loc)
                if str(path) in reading.broken:
                    continue
                reading.errors.append(_pydantic_error(error, path))
                reading.broken.add(str(path))
                _set_aside(data, loc, missing=error["type"] == "missing")
        else:
            return reading
    return reading


# ---------------------------------------------------------------------------------------------
# Ordering errors as the fields appear in the object


def _tokens(field_path: str) -> list[str]:
    return [
        m.group(1) if m.group(1) is not None else m.group(2)
        for m in _PATH_TOKEN.finditer(field_path)
    ]


def _order_key(obj: Any, field_path: str) -> tuple[int, ...]:
    key: list[int] = []
    node = obj
    for token in _tokens(field_path):
        if isinstance(node, dict):
            keys = list(node)
            position = keys.index(token) if token in keys else len(keys)
            key.append(position)
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit():
            key.append(int(token))
            index = int(token)
            node = node[index] if index < len(node) else None
        else:
            key.append(0)
            node = None
    return tuple(key)


def sort_errors(obj: Any, errors: list[FieldError]) -> list[FieldError]:
    """Errors in the order of their fields in `obj` (stable for errors on the same field)."""
    return sorted(errors, key=lambda e: _order_key(obj, e.field))


# ---------------------------------------------------------------------------------------------
# Rules


@dataclass
class _Rules:
    reading: Reading
    job: Job
    errors: list[FieldError] = field(default_factory=list)
    recall: memo.Recall = memo.fresh

    def min_available_is_task_sum(self) -> bool:
        """spec.minAvailable equals Σ task minAvailable (what the default gives). Its upper
        bounds then follow from the per-task bounds, which are checked: a job-level error would
        only repeat a task's."""
        values = [t.min_available for t in self.tasks]
        if any(v is None for v in values):
            return False
        return self.job.spec.min_available == sum(v for v in values if v is not None)

    def ok(self, path: Path) -> bool:
        return self.reading.readable(path)

    def add(self, error: FieldError) -> None:
        self.errors.append(error)

    @property
    def tasks(self) -> list[TaskSpec]:
        return self.job.spec.tasks

    def task_names(self) -> set[str]:
        return {t.name for t in self.tasks if t.name}


def _label_errors(path: Path, value: str) -> list[FieldError]:
    return FieldError.invalid_each(path, value, names.dns1123_label(value))


def _job_name(rules: _Rules) -> str | None:
    """The job's name for naming checks, or None when it is missing or invalid (reported)."""
    metadata = rules.job.metadata
    name = metadata.get("name")
    if isinstance(name, str) and name:
        label_errors = _label_errors(Path.of("metadata", "name"), name)
        if label_errors:
            rules.errors.extend(label_errors)
            return None
        return name
    generate = metadata.get("generateName")
    if isinstance(generate, str) and generate:
        probe = generate + GENERATED_SUFFIX
        if problems := names.dns1123_label(probe):
            rules.errors.extend(
                FieldError.invalid_each(
                    Path.of("metadata", "generateName"),
                    generate,
                    [
                        f"with the generated suffix the name must be a DNS-1123 label: {p}"
                        for p in problems
                    ],
                )
            )
            return None
        return probe
    rules.add(FieldError.required(Path.of("metadata", "name"), "name or generateName is required"))
    return None


def _check_task_names(rules: _Rules, job_name: str | None) -> None:
    if not rules.tasks and rules.ok(TASKS):
        rules.add(
            FieldError.required(
                TASKS, "No task specified in job spec: at least one task is required"
            )
        )
    seen: set[str] = set()
    for i, task in enumerate(rules.tasks):
        where = TASKS.index(i).child("name")
        name = task.name
        if name is None or not rules.ok(where):
            continue
        label_errors = _label_errors(where, name)
        if label_errors:
            rules.errors.extend(label_errors)
            continue
        if name in seen:
            rules.add(FieldError.duplicate(where, name, "duplicated task name"))
        seen.add(name)
        if job_name is not None and task.replica_count >= 1:
            pod = f"{job_name}-{name}-{task.replica_count - 1}"
            if problems := names.dns1123_label(pod):
                rules.add(
                    FieldError.invalid(
                        where,
                        name,
                        f'the pod name "{pod}" (job name, task name and highest index) must be '
                        f"a DNS-1123 label: {'; '.join(problems)}",
                    )
                )


def _check_task_bounds(rules: _Rules) -> None:
    """replicas / minAvailable / elastic bounds of each task (CREATE and UPDATE)."""
    for i, task in enumerate(rules.tasks):
        where = TASKS.index(i)
        replicas = task.replicas
        if replicas is None and rules.ok(where.child("replicas")):
            replicas = 0
        min_available = task.min_available
        if replicas is not None and min_available is not None and min_available > replicas:
            rules.add(
                FieldError.invalid(
                    where.child("minAvailable"),
                    min_available,
                    f"'minAvailable' is greater than 'replicas' in task {task.name}: "
                    f"must be less than or equal to replicas ({replicas})",
                )
            )
            min_available = None  # reported; the elastic bound below would repeat it
        min_r, max_r = task.min_replicas, task.max_replicas
        readable = rules.ok(where.child("minReplicas")) and rules.ok(where.child("maxReplicas"))
        if (min_r is None) != (max_r is None):
            if readable:
                missing = "maxReplicas" if max_r is None else "minReplicas"
                rules.add(
                    FieldError.required(
                        where.child(missing), "minReplicas and maxReplicas must be set together"
                    )
                )
            continue
        if min_r is None or max_r is None:
            continue
        if min_r > max_r:
            rules.add(
                FieldError.invalid(
                    where.child("minReplicas"),
                    min_r,
                    f"must be less than or equal to maxReplicas ({max_r})",
                )
            )
            continue
        if replicas is not None and not min_r <= replicas <= max_r:
            rules.add(
                FieldError.invalid(
                    where.child("replicas"),
                    replicas,
                    f"must be between minReplicas ({min_r}) and maxReplicas ({max_r}), inclusive",
                )
            )
        if min_available is not None and min_available > min_r:
            rules.add(
                FieldError.invalid(
                    where.child("minAvailable"),
                    min_available,
                    f"must be less than or equal to minReplicas ({min_r})",
                )
            )


def _check_network_topology(rules: _Rules, topology: NetworkTopology | None, where: Path) -> None:
    if topology is None:
        return
    if topology.highest_tier_allowed is not None and topology.highest_tier_name:
        rules.add(
            FieldError.forbidden(
                where.child("highestTierName"),
                "must not be set together with highestTierAllowed (name one tier or the other)",
            )
        )


def _check_partitions(rules: _Rules) -> None:
    """partitionPolicy against replicas and minAvailable, first failure per task, as Volcano
    checks it on CREATE and UPDATE; then the partition's networkTopology."""
    for i, task in enumerate(rules.tasks):
        policy = task.partition_policy
        if policy is None:
            continue
        where = TASKS.index(i)
        at = where.child("partitionPolicy")
        total, size = policy.total_partitions, policy.partition_size
        if total is None:
            rules.add(FieldError.required(at.child("totalPartitions"), ""))
        elif total <= 0:
            rules.add(
                FieldError.invalid(at.child("totalPartitions"), total, "must be greater than 0")
            )
        elif size is None:
            rules.add(FieldError.required(at.child("partitionSize"), ""))
        elif size <= 0:
            rules.add(FieldError.invalid(at.child("partitionSize"), size, "must be greater than 0"))
        elif task.replica_count != total * size:
            rules.add(
                FieldError.invalid(
                    where.child("replicas"),
                    task.replica_count,
                    f"must equal partitionPolicy.totalPartitions * partitionSize ({total * size})",
                )
            )
        elif (
            task.min_available is not None
            and (policy.min_partitions or 0) > 0
            and (policy.min_partitions or 0) * size != task.min_available
        ):
            wanted = (policy.min_partitions or 0) * size
            rules.add(
                FieldError.invalid(
                    where.child("minAvailable"),
                    task.min_available,
                    f"must equal partitionPolicy.minPartitions * partitionSize ({wanted})",
                )
            )
        _check_network_topology(rules, policy.network_topology, at.child("networkTopology"))


def _check_job_topology(rules: _Rules) -> None:
    """The job's networkTopology tiers, and runningEstimate as a Go duration."""
    spec = rules.job.spec
    _check_network_topology(rules, spec.network_topology, SPEC.child("networkTopology"))
    estimate = spec.running_estimate
    if estimate is not None and rules.ok(SPEC.child("runningEstimate")):
        try:
            parse_duration(estimate)
        except ValueError as err:
            rules.add(FieldError.invalid(SPEC.child("runningEstimate"), estimate, str(err)))


def _check_job_bounds(rules: _Rules, least_min_available: int = 1) -> None:
    """Job-level bounds. A new job's gang is at least 1; an update may scale it to 0, as in
    Volcano (`least_min_available` 0)."""
    spec = rules.job.spec
    if not all(rules.ok(TASKS.index(i).child("replicas")) for i in range(len(rules.tasks))):
        return  # the totals are unknown; the unreadable replicas are reported
    total = spec.total_replicas
    where = SPEC.child("minAvailable")
    min_available = spec.min_available
    if min_available is not None and rules.tasks:
        if min_available < least_min_available:
            rules.add(
                FieldError.invalid(
                    where,
                    min_available,
                    f"should be greater than or equal to {least_min_available}",
                )
            )
        elif rules.min_available_is_task_sum():
            pass
        elif min_available > total:
            rules.add(
                FieldError.invalid(
                    where,
                    min_available,
                    f"job 'minAvailable' should not be greater than total replicas ({total}, "
                    "the sum of the tasks' replicas)",
                )
            )
        elif any(t.is_elastic for t in rules.tasks):
            floor = sum(
                (t.min_replicas or 0) if t.is_elastic else t.replica_count for t in rules.tasks
            )
            if min_available > floor:
                rules.add(
                    FieldError.invalid(
                        where,
                        min_available,
                        f"must be less than or equal to {floor}, the sum over tasks of "
                        "minReplicas (elastic tasks) or replicas (other tasks)",
                    )
                )
    if spec.min_success is not None and spec.min_success > total:
        rules.add(
            FieldError.invalid(
                SPEC.child("minSuccess"),
                spec.min_success,
                f"job 'minSuccess' should not be greater than total replicas ({total}, "
                "the sum of the tasks' replicas)",
            )
        )


def _check_success_policy(rules: _Rules) -> None:
    policy = rules.job.spec.success_policy
    if policy is None:
        return
    rules_path = SPEC.child("successPolicy", "rules")
    if not policy.rules and rules.ok(rules_path):
        rules.add(
            FieldError.required(
                rules_path,
                "at least one rule must be specified when the successPolicy is specified",
            )
        )
    by_name = {t.name: t for t in rules.tasks if t.name}
    total = rules.job.spec.total_replicas
    for k, rule in enumerate(policy.rules):
        where = rules_path.index(k)
        indexes_path, count_path = where.child("succeededIndexes"), where.child("succeededCount")
        if rule.succeeded_indexes is None and rule.succeeded_count is None:
            if rules.ok(indexes_path) and rules.ok(count_path):
                rules.add(
                    FieldError.required(
                        where,
                        "at least one of succeededCount or succeededIndexes must be specified",
                    )
                )
            continue
        task: TaskSpec | None = None
        if rule.task_name is not None:
            task = by_name.get(rule.task_name)
            if task is None:
                rules.add(
                    FieldError.invalid(
                        where.child("taskName"),
                        rule.task_name,
                        "must be the name of a task in spec.tasks",
                    )
                )
                continue
        elif rule.succeeded_indexes is not None:
            if len(rules.tasks) == 1:
                task = rules.tasks[0]
            elif rules.ok(where.child("taskName")):
                rules.add(
                    FieldError.required(
                        where.child("taskName"),
                        "must name a task when succeededIndexes is set and the job has more "
                        "than one task",
                    )
                )
        listed: int | None = None
        if rule.succeeded_indexes is not None:
            text = rule.succeeded_indexes
            try:
                intervals = indexranges.parse(text)
            except indexranges.IndexRangeError as exc:
                rules.add(
                    FieldError.invalid(
                        indexes_path, _shown(text), f"error parsing succeededIndexes: {exc}"
                    )
                )
                intervals = None
            if intervals is not None:
                listed = sum(last - first + 1 for first, last in intervals)
                if not intervals:
                    rules.add(
                        FieldError.invalid(indexes_path, text, "must list at least one index")
                    )
                elif task is not None and intervals[-1][1] >= task.replica_count:
                    rules.add(
                        FieldError.invalid(
                            indexes_path,
                            _shown(text),
                            f"must be less than {task.replica_count} "
                            f"(the replicas of task {task.name})",
                        )
                    )
        count = rule.succeeded_count
        if count is None:
            continue
        if count <= 0:
            rules.add(FieldError.invalid(count_path, count, "must be greater than 0"))
        elif rule.succeeded_indexes is not None:
            if listed is not None and count > listed:
                rules.add(
                    FieldError.invalid(
                        count_path,
                        count,
                        f"must be less than or equal to {listed} (the number of indexes in the "
                        "specified succeededIndexes field)",
                    )
                )
        elif task is not None:
            if count > task.replica_count:
                rules.add(
                    FieldError.invalid(
                        count_path,
                        count,
                        f"must be less than or equal to {task.replica_count} "
                        f"(the replicas of task {task.name})",
                    )
                )
        elif count > total:
            rules.add(
                FieldError.invalid(
                    count_path,
                    count,
                    f"must be less than or equal to {total} (the total replicas of the job)",
                )
            )


def _policy_events(policy: LifecyclePolicy, where: Path) -> Iterator[tuple[str, Path]]:
    if policy.event:
        yield policy.event, where.child("event")
    for k, event in enumerate(policy.events or []):
        yield event, where.child("events").index(k)


def _check_policies(rules: _Rules, policies: list[LifecyclePolicy] | None, path: Path) -> None:
    seen_events: dict[str, Path] = {}
    # An event repeated inside one policy's list is admitted with a warning (Volcano reads it
    # once: webhook.rules.job_warnings); across policies it is refused.
    event_policy: dict[str, int] = {}
    seen_codes: set[int] = set()
    for j, policy in enumerate(policies or []):
        where = path.index(j)
        events = list(_policy_events(policy, where))
        has_code = policy.exit_code is not None
        readable = all(rules.ok(where.child(f)) for f in ("event", "events", "exitCode"))
        if events and has_code:
            rules.add(
                FieldError.forbidden(
                    where.child("exitCode"),
                    "must not specify event and exitCode simultaneously: set event or events, "
                    "or exitCode",
                )
            )
        elif not events and not has_code and readable:
            rules.add(
                FieldError.required(
                    where,
                    "either event and exitCode should be specified: set one of event, events "
                    "or exitCode",
                )
            )
        for event, event_path in events:
            if event not in EVENTS:
                rules.add(wording.unsupported(event_path, event, EVENTS, "invalid policy event"))
            elif event_policy.get(event, j) != j:
                rules.add(
                    FieldError.duplicate(
                        event_path, event, f"duplicate event {event} across different policy"
                    )
                )
            elif event not in seen_events:
                seen_events[event] = event_path
                event_policy[event] = j
        action_path = where.child("action")
        if not policy.action:
            if rules.ok(action_path):
                rules.add(
                    FieldError.required(
                        action_path, "invalid policy action: every policy needs an action"
                    )
                )
        elif policy.action not in ACTIONS:
            rules.add(
                wording.unsupported(action_path, policy.action, ACTIONS, "invalid policy action")
            )
        if policy.exit_code is not None:
            code_path = where.child("exitCode")
            if policy.exit_code == 0:
                rules.add(
                    FieldError.invalid(
                        code_path, 0, "0 is not a valid error code; use a non-zero exit code"
                    )
                )
            elif policy.exit_code in seen_codes:
                rules.add(
                    FieldError.duplicate(
                        code_path, policy.exit_code, f"duplicate exitCode {policy.exit_code}"
                    )
                )
            seen_codes.add(policy.exit_code)
        if policy.timeout is not None:
            try:
                timeout = parse_duration(policy.timeout)
            except ValueError as exc:
                rules.add(
                    FieldError.invalid(where.child("timeout"), _shown(policy.timeout), str(exc))
                )
            else:
                if timeout.total_seconds() < 0:
                    rules.add(
                        FieldError.invalid(
                            where.child("timeout"), policy.timeout, "must not be negative"
                        )
                    )
    if "*" in seen_events and len(seen_events) > 1:
        rules.add(
            FieldError.invalid(
                seen_events["*"],
                "*",
                "if there's * here, no other policy should be here: * matches every event, so "
                "it must be the only event in the list; remove the other events or the * policy",
            )
        )


def _cycle_path(start: str, graph: dict[str, list[str]]) -> list[str] | None:
    """A shortest path start → … → start following dependency edges, if there is one."""
    frontier: list[list[str]] = [[start]]
    visited: set[str] = set()
    while frontier:
        next_frontier: list[list[str]] = []
        for trail in frontier:
            for nxt in graph.get(trail[-1], []):
                if nxt == start:
                    return [*trail, start]
                if nxt not in visited:
                    visited.add(nxt)
                    next_frontier.append([*trail, nxt])
        frontier = next_frontier
    return None


def _check_depends_on(rules: _Rules) -> None:
    known = rules.task_names()
    graph: dict[str, list[str]] = {}
    for i, task in enumerate(rules.tasks):
        if task.depends_on is None:
            continue
        where = TASKS.index(i).child("dependsOn")
        listed: set[str] = set()
        for k, dependency in enumerate(task.depends_on.name or []):
            entry = where.child("name").index(k)
            if dependency == task.name:
                rules.add(FieldError.invalid(entry, dependency, "a task cannot depend on itself"))
            elif dependency not in known:
                rules.add(
                    FieldError.not_found(entry, dependency, "no task of this name in spec.tasks")
                )
            elif dependency in listed:
                rules.add(FieldError.duplicate(entry, dependency))
            elif task.name:
                graph.setdefault(task.name, []).append(dependency)
            listed.add(dependency)
        iteration = task.depends_on.iteration
        if iteration is not None and iteration not in ITERATIONS:
            rules.add(FieldError.not_supported(where.child("iteration"), iteration, ITERATIONS))
    reported: set[str] = set()
    for i, task in enumerate(rules.tasks):
        if not task.name or task.name in reported:
            continue
        cycle = _cycle_path(task.name, graph)
        if cycle is None:
            continue
        reported.update(cycle)
        rules.add(
            FieldError.invalid(
                TASKS.index(i).child("dependsOn", "name"),
                task.depends_on.name if task.depends_on else None,
                f"dependencies form a cycle: {' -> '.join(cycle)}",
            )
        )


def _check_topology(rules: _Rules, task: TaskSpec, where: Path) -> None:
    policy = task.topology_policy
    if policy is None or policy == "":
        return
    if policy not in TOPOLOGY_POLICIES:
        rules.add(
            FieldError.not_supported(where.child("topologyPolicy"), policy, TOPOLOGY_POLICIES)
        )
        return
    if policy != "none":
        rules.errors.extend(
            podtemplate.topology_errors(task.template, where.child("template"), policy)
        )


def _check_templates(rules: _Rules) -> None:
    # Tasks often share one pod template (ps and workers): a template equal to one already
    # found valid needs no second look.
    valid: list[dict[str, Any]] = []
    for i, task in enumerate(rules.tasks):
        where = TASKS.index(i)
        if rules.ok(where.child("template")) and task.template not in valid:
            found = podtemplate.validate_template(
                task.template, where.child("template"), rules.recall
            )
            rules.errors.extend(found)
            if not found:
                valid.append(task.template)
        _check_topology(rules, task, where)
        _check_policies(rules, task.policies, where.child("policies"))


def _check_plugins(rules: _Rules) -> None:
    plugins = rules.job.spec.plugins
    if not plugins:
        return
    base = SPEC.child("plugins")
    for plugin, arguments in plugins.items():
        where = base.key(plugin)
        descriptor = registry.get(plugin)
        if descriptor is None:
            rules.add(FieldError.not_supported(where, plugin, registry.names()))
            continue
        # Argument problems are warnings (webhook.rules.job_warnings): Volcano admits them and
        # its controller reads the flags up to the first one, as vcjob's does.
        parsed = pluginargs.parse(plugin, arguments)
        check = PluginCheck(arguments, parsed, rules.task_names(), where)
        rules.errors.extend(descriptor.validate(check))


def _check_volumes(rules: _Rules) -> None:
    seen: set[str] = set()
    base = SPEC.child("volumes")
    for i, volume in enumerate(rules.job.spec.volumes or []):
        where = base.index(i)
        mount = volume.mount_path
        if rules.ok(where.child("mountPath")):
            if not mount:
                rules.add(FieldError.required(where.child("mountPath"), "mountPath is required"))
            elif ":" in mount:
                rules.add(
                    FieldError.invalid(where.child("mountPath"), mount, "must not contain ':'")
                )
            elif mount in seen:
                rules.add(
                    FieldError.duplicate(
                        where.child("mountPath"), mount, f"duplicated mountPath: {mount}"
                    )
                )
            seen.add(mount)
        claim_name, claim = volume.volume_claim_name, volume.volume_claim
        name_path = where.child("volumeClaimName")
        if not claim_name and claim is None:
            if rules.ok(name_path) and rules.ok(where.child("volumeClaim")):
                rules.add(
                    FieldError.required(
                        name_path, "either VolumeClaim or VolumeClaimName must be specified"
                    )
                )
        elif claim_name and claim is not None:
            rules.add(
                FieldError.forbidden(
                    name_path,
                    "must not be set together with volumeClaim: set only volumeClaimName to use "
                    "an existing PVC, or only volumeClaim to create a new one",
                )
            )
        else:
            rules.errors.extend(_subdomain_errors(name_path, claim_name))


def _check_queue(rules: _Rules, queues: QueueView) -> None:
    name = rules.job.spec.queue
    where = SPEC.child("queue")
    if not name or not rules.ok(where):
        return
    queue = queues.get(name)
    if queue is None:
        rules.add(FieldError.not_found(where, name, "no Queue of this name exists"))
        return
    if name == "root":
        rules.add(FieldError.invalid(where, name, "jobs cannot be submitted to the root queue"))
        return
    if not queue.is_open:
        state = queue.status.state if queue.status else None
        rules.add(
            FieldError.invalid(
                where, name, f"the queue is {state}; jobs can only be submitted to an Open queue"
            )
        )
    children = queues.children(name)
    if children:
        rules.add(
            FieldError.invalid(
                where,
                name,
                f"the queue has child queues ({', '.join(sorted(children))}); jobs can only be "
                "submitted to a leaf queue",
            )
        )


def _subdomain_errors(path: Path, value: str | None) -> list[FieldError]:
    """A name that is set must be a DNS-1123 subdomain."""
    return FieldError.invalid_each(path, value, names.dns1123_subdomain(value)) if value else []


def _check_job_scalars(rules: _Rules) -> None:
    """What the models cannot express on their own (their ge= bounds are already checked)."""
    spec = rules.job.spec
    rules.errors.extend(_subdomain_errors(SPEC.child("schedulerName"), spec.scheduler_name))
    rules.errors.extend(
        _subdomain_errors(SPEC.child("priorityClassName"), spec.priority_class_name)
    )
    rules.errors.extend(_subdomain_errors(SPEC.child("queue"), spec.queue))


# ---------------------------------------------------------------------------------------------
# CREATE


def _is_object(value: object) -> bool:
    """Admission objects are typed as dicts but arrive from the network: check anyway."""
    return isinstance(value, dict)


def validate_create(
    raw: dict[str, Any],
    queues: QueueView | None,
    settings: Settings,
    recall: memo.Recall = memo.fresh,
) -> list[FieldError]:
    """Every problem of a new Job, judged on its defaulted form. `queues` None skips the queue
    check (no Queue CRD, or the check is off); `recall` may remember the spec's problems."""
    if not _is_object(raw):
        return [FieldError.invalid(Path(), _shown(raw), "must be a Job object")]
    defaulted = defaulted_view(raw, settings.scheduler_name)
    reading = read_job(defaulted)
    if reading.job is None:
        return sort_errors(defaulted, reading.errors)
    rules = _Rules(reading, reading.job, list(reading.errors))
    job_name = _job_name(rules)
    _check_task_names(rules, job_name)
    first, last = _spec_problems(
        raw.get("spec"), reading, rules.job, settings.scheduler_name, recall
    )
    rules.errors.extend(first)
    rules.errors.extend(jobcontrol.create_errors(raw))
    if queues is not None:
        _check_queue(rules, queues)
    rules.errors.extend(last)
    rules.errors.extend(lifecycle.validate_spec(raw))
    return sort_errors(defaulted, rules.errors)


SpecProblems = tuple[tuple[FieldError, ...], tuple[FieldError, ...]]
# First part of the memo keys of spec problems (`_spec_problems`).
MEMO_TAG: Final = b"spec"


def _spec_problems(
    raw_spec: Any, reading: Reading, job: Job, scheduler_name: str, recall: memo.Recall
) -> SpecProblems:
    """The problems found by the checks that read the (defaulted) spec alone: those before the
    queue check and those after it, in the order the checks run.

    They depend on the raw spec and the scheduler name only (defaulting reads nothing else),
    and jobs made from one manifest share their spec: `recall` may remember them by the spec's
    digest. A Job with a value that could not be read (then `reading.broken` is not empty) is
    rare and always worked out afresh.
    """
    encoded = None if reading.broken else memo.encoding(raw_spec)
    if encoded is None:
        return _work_out_spec_problems(reading, job, recall)
    key = memo.digest(MEMO_TAG, scheduler_name.encode(), encoded)
    return recall(key, lambda: _work_out_spec_problems(reading, job, recall))


def _work_out_spec_problems(reading: Reading, job: Job, recall: memo.Recall) -> SpecProblems:
    first = _Rules(reading, job, recall=recall)
    _check_task_bounds(first)
    _check_depends_on(first)
    _check_templates(first)
    _check_job_scalars(first)
    _check_job_bounds(first)
    _check_partitions(first)
    _check_job_topology(first)
    _check_policies(first, job.spec.policies, SPEC.child("policies"))
    _check_plugins(first)
    _check_volumes(first)
    last = _Rules(reading, job)
    _check_success_policy(last)
    return (tuple(first.errors), tuple(last.errors))


# ---------------------------------------------------------------------------------------------
# UPDATE


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, list | dict) and not value)


def _same_scalar(old: Any, new: Any, in_quantities: bool) -> bool:
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    if isinstance(old, int | float) and isinstance(new, int | float):
        if old == new:
            return True
    elif type(old) is type(new) and old == new:
        return True
    if in_quantities:
        a, b = quantity.try_parse(old), quantity.try_parse(new)
        return a is not None and a == b
    return False


def _changes(
    old: Any, new: Any, path: Path, in_quantities: bool = False
) -> Iterator[tuple[Path, Any]]:
    """Field paths where `new` differs semantically from `old`, with the new value."""
    if _is_empty(old) and _is_empty(new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        keys = list(new) + [k for k in old if k not in new]
        quantities = path.parts[-1] if path.parts else ""
        for key in keys:
            child = (
                path.key(key) if in_quantities or quantities in QUANTITY_MAPS else path.child(key)
            )
            yield from _changes(
                old.get(key), new.get(key), child, in_quantities or key in QUANTITY_MAPS
            )
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _changes(a, b, path.index(i), in_quantities)
        return
    if isinstance(old, dict | list) or isinstance(new, dict | list):
        yield path, new
        return
    if not _same_scalar(old, new, in_quantities):
        yield path, new


def _without_mutable(spec: dict[str, Any], claims: set[int]) -> dict[str, Any]:
    spec = copy_json(spec)
    for key in MUTABLE_JOB_FIELDS:
        spec.pop(key, None)
    tasks = spec.get("tasks")
    if isinstance(tasks, list):
        for task in tasks:
            if isinstance(task, dict):
                for key in MUTABLE_TASK_FIELDS:
                    task.pop(key, None)
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        for i, volume in enumerate(volumes):
            if isinstance(volume, dict) and i in claims:
                volume.pop("volumeClaimName", None)
    return spec


def _claim_volumes(*specs: dict[str, Any]) -> set[int]:
    """Indexes of volumes that create their PVC (their volumeClaimName is written back)."""
    found: set[int] = set()
    for spec in specs:
        volumes = spec.get("volumes")
        if isinstance(volumes, list):
            found.update(
                i for i, v in enumerate(volumes) if isinstance(v, dict) and v.get("volumeClaim")
            )
    return found


def _phase(job: dict[str, Any]) -> str | None:
    status = job.get("status")
    state = status.get("state") if isinstance(status, dict) else None
    phase = state.get("phase") if isinstance(state, dict) else None
    return phase if isinstance(phase, str) else None


def _immutability_errors(
    old: dict[str, Any], new: dict[str, Any], phase: str | None
) -> list[FieldError]:
    old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    new_spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    assert isinstance(old_spec, dict) and isinstance(new_spec, dict)  # noqa: S101 - narrowing
    errors: list[FieldError] = []
    old_tasks, new_tasks = old_spec.get("tasks"), new_spec.get("tasks")
    comparable_old = _without_mutable(old_spec, _claim_volumes(old_spec, new_spec))
    comparable_new = _without_mutable(new_spec, _claim_volumes(old_spec, new_spec))
    if (
        isinstance(old_tasks, list)
        and isinstance(new_tasks, list)
        and len(old_tasks) != len(new_tasks)
    ):
        errors.append(
            FieldError.forbidden(
                TASKS,
                f"job updates may not add or remove tasks (the job has {len(old_tasks)}, the "
                f"update has {len(new_tasks)})",
            )
        )
        comparable_old.pop("tasks", None)
        comparable_new.pop("tasks", None)
    for path, value in _changes(comparable_old, comparable_new, SPEC):
        errors.append(FieldError.invalid(path, _shown(value), wording.IMMUTABLE))
    if phase in FINISHED_PHASES and isinstance(old_tasks, list) and isinstance(new_tasks, list):
        for i, (a, b) in enumerate(zip(old_tasks, new_tasks, strict=False)):
            if (
                isinstance(a, dict)
                and isinstance(b, dict)
                and a.get("replicas") != b.get("replicas")
            ):
                errors.append(
                    FieldError.forbidden(
                        TASKS.index(i).child("replicas"), f"a {phase} job cannot be scaled"
                    )
                )
    return errors


def validate_update(
    new: dict[str, Any], old: dict[str, Any], settings: Settings
) -> list[FieldError]:
    """Every problem of an update: immutable fields, task count, bounds on the new object, and
    no scaling of finished jobs."""
    if not _is_object(new):
        return [FieldError.invalid(Path(), _shown(new), "must be a Job object")]
    new_defaulted = defaulted_view(new, settings.scheduler_name)
    errors = list(read_job(new_defaulted).errors)
    already_wrong: set[str] = set()
    if _is_object(old):
        old_defaulted = defaulted_view(old, settings.scheduler_name)
        errors.extend(
            _immutability_errors(
                lifecycle.without_mutable(old_defaulted),
                lifecycle.without_mutable(new_defaulted),
                _phase(old),
            )
        )
        errors.extend(lifecycle.validate_update(old_defaulted, new_defaulted, _phase(old)))
        errors.extend(jobcontrol.update_errors(old, new))
        already_wrong = {str(e) for e in _bound_errors(old_defaulted)}
    else:
        errors.append(FieldError.invalid(Path.of("oldObject"), _shown(old), "must be a Job object"))
    # A bound the stored job already broke (it was admitted some other way) does not block
    # unrelated updates such as the controller writing a PVC name back: only new problems count.
    errors.extend(e for e in _bound_errors(new_defaulted) if str(e) not in already_wrong)
    return sort_errors(new_defaulted, errors)


def _bound_errors(defaulted: dict[str, Any]) -> list[FieldError]:
    reading = read_job(defaulted)
    if reading.job is None:
        return []
    rules = _Rules(reading, reading.job, [])
    _check_task_bounds(rules)
    _check_job_bounds(rules, least_min_available=0)
    _check_partitions(rules)
    _check_job_topology(rules)
    _check_success_policy(rules)
    _check_mutable_names(rules)
    return rules.errors


def _check_mutable_names(rules: _Rules) -> None:
    """The names an update may change must still be names."""
    spec = rules.job.spec
    rules.errors.extend(
        _subdomain_errors(SPEC.child("priorityClassName"), spec.priority_class_name)
    )
    for i, volume in enumerate(spec.volumes or []):
        where = SPEC.child("volumes").index(i).child("volumeClaimName")
        rules.errors.extend(_subdomain_errors(where, volume.volume_claim_name))
