"""What the CLI prints, as pure functions of the objects: vcctl's tables and `job view`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, tzinfo
from typing import Any, Final

import yaml

from shared import plugins
from shared.rfc3339 import parse_time
from shared.wire import (
    WireObject,
    creation_timestamp,
    dig,
    job_status,
    labels_of,
    metadata,
    name_of,
    namespace_of,
    spec_of,
    state_phase,
    status_of,
    status_phase,
)

JOB_TYPE_LABEL: Final = "volcano.sh/job-type"
NO_RESOURCES: Final = "No resources found"
UNKNOWN_PLUGIN: Final = "  (not a vcjob plugin: ignored)"
# (header, width) of `vcctl job list`; Name and Namespace are sized to their longest value.
JOB_COLUMNS: Final = (
    ("Creation", 15),
    ("Phase", 12),
    ("JobType", 12),
    ("Replicas", 12),
    ("Min", 6),
    ("Pending", 10),
    ("Running", 10),
    ("Succeeded", 12),
    ("Failed", 10),
    ("Unknown", 12),
    ("RetryCount", 10),
)
WIDE_COLUMNS: Final = (("Queue", 12), ("Scheduler", 12))
QUEUE_COLUMNS: Final = (
    "Name",
    "Weight",
    "State",
    "Parent",
    "Inqueue",
    "Pending",
    "Running",
    "Unknown",
    "Completed",
)


def _row(cells: Sequence[tuple[str, int]]) -> str:
    """Left-aligned cells; a value as wide as its column still gets one space after it."""
    return "".join(v.ljust(w) if len(v) < w else v + " " for v, w in cells).rstrip()


def padded_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], spacing: int, *, sized_by_header: bool
) -> str:
    """Every column as wide as its longest cell plus `spacing` (vcctl's `%-<max+n>s` tables of
    jobflows, job templates and pods); the header's cells count unless `sized_by_header` is
    False (vcctl's pod table sizes its columns by the values only)."""
    lines = [list(header), *(list(r) for r in rows)]
    sizing = lines if sized_by_header else lines[1:]
    widths = [max(len(line[i]) for line in sizing) + spacing for i in range(len(header))]
    return "\n".join(_row(list(zip(line, widths, strict=True))) for line in lines)


def _creation(obj: WireObject, zone: tzinfo | None) -> str:
    stamp = creation_timestamp(obj)
    if not stamp:
        return ""
    moment = parse_time(stamp)
    return moment.astimezone(zone).strftime("%Y-%m-%d") if moment else ""


def _replicas(job: WireObject) -> int:
    tasks = spec_of(job).get("tasks") or []
    return sum(int(t.get("replicas") or 0) for t in tasks if isinstance(t, dict))


def job_cells(job: WireObject, zone: tzinfo | None, wide: bool) -> list[str]:
    status, spec = job_status(job), spec_of(job)
    cells = [
        _creation(job, zone),
        state_phase(status),
        str(labels_of(job).get(JOB_TYPE_LABEL) or "Batch"),
        str(_replicas(job)),
        str(status.get("minAvailable") or 0),
        *(str(status.get(k) or 0) for k in ("pending", "running", "succeeded", "failed")),
        str(status.get("unknown") or 0),
        str(status.get("retryCount") or 0),
    ]
    if wide:
        cells += [str(spec.get("queue") or ""), str(spec.get("schedulerName") or "")]
    return cells


def job_table(
    jobs: Sequence[WireObject], all_namespaces: bool, zone: tzinfo | None, wide: bool = False
) -> str:
    """`vcctl job list`: Name (and Namespace) as wide as their longest value plus three."""
    if not jobs:
        return NO_RESOURCES
    columns = list(JOB_COLUMNS) + (list(WIDE_COLUMNS) if wide else [])
    names = [name_of(j) for j in jobs]
    spaces = [namespace_of(j) for j in jobs]
    name_width = max(4, *(len(n) for n in names)) + 3
    space_width = max(9, *(len(n) for n in spaces)) + 3
    lead: list[tuple[str, int]] = [("Namespace", space_width)] if all_namespaces else []
    lines = [_row([*lead, ("Name", name_width), *columns])]
    for job, name, space in zip(jobs, names, spaces, strict=True):
        first = [(space, space_width)] if all_namespaces else []
        cells = job_cells(job, zone, wide)
        widths = [w for _, w in columns]
        lines.append(_row([*first, (name, name_width), *zip(cells, widths, strict=True)]))
    return "\n".join(lines)


def podgroup_phases(podgroups: Iterable[WireObject]) -> dict[str, Counter[str]]:
    """Per queue, how many PodGroups are in each phase (vcctl counts them itself)."""
    out: dict[str, Counter[str]] = {}
    for group in podgroups:
        queue = str(spec_of(group).get("queue") or "")
        phase = status_phase(group)
        out.setdefault(queue, Counter())[phase] += 1
    return out


def queue_table(queues: Sequence[WireObject], phases: dict[str, Counter[str]]) -> str:
    """`vcctl queue list` / `get`: `%-25s` then `%-8s` for every other column."""
    if not queues:
        return NO_RESOURCES
    widths = [25] + [8] * (len(QUEUE_COLUMNS) - 1)
    lines = [_row(list(zip(QUEUE_COLUMNS, widths, strict=True)))]
    for queue in queues:
        name = name_of(queue)
        spec = spec_of(queue)
        counts = phases.get(name, Counter())
        cells = [
            name,
            str(spec.get("weight") or 0),
            str(status_of(queue).get("state") or ""),
            str(spec.get("parent") or ""),
            *(str(counts[p]) for p in ("Inqueue", "Pending", "Running", "Unknown", "Completed")),
        ]
        lines.append(_row(list(zip(cells, widths, strict=True))))
    return "\n".join(lines)


def human_duration(seconds: float) -> str:
    """kubectl's AGE (apimachinery's `HumanDuration`): exact for short spans, coarser as they
    grow (`90s`, `5m3s`, `47m`, `3h20m`, `30h`, `4d2h`, `200d`, `3y14d`)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{days // 365}y{rest}d" if rest else f"{days // 365}y"
    return f"{days // 365}y"


def since(stamp: Any, now: datetime) -> str:
    """The age of an RFC 3339 timestamp at `now`; `<unknown>` when there is none."""
    moment = parse_time(stamp) if stamp else None
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def as_list(items: Sequence[WireObject]) -> WireObject:
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {}}


def dump(obj: Any, output: str) -> str:
    if output == "json":
        return json.dumps(obj, indent=2)
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False).rstrip("\n")


# --- job view ---------------------------------------------------------------------------------


def _json_or_none(value: Any) -> str:
    return json.dumps(value, separators=(",", ":")) if value else "<none>"


def _age(stamp: Any, now: datetime) -> str:
    moment = parse_time(stamp)
    if moment is None:
        return "<unknown>"
    seconds = max(0, int((now - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _lines(out: list[str], level: int, key: str, value: Any = None) -> None:
    pad = "  " * level
    out.append(f"{pad}{key}:" if value is None else f"{pad}{key}:\t{value}")


def _container(out: list[str], container: WireObject, level: int) -> None:
    resources = container.get("resources") or {}
    _lines(out, level, "Command")
    for part in container.get("command") or []:
        out.append("  " * (level + 1) + str(part))
    _lines(out, level, "Image", container.get("image", ""))
    _lines(out, level, "Name", container.get("name", ""))
    _lines(out, level, "Ports")
    for port in container.get("ports") or []:
        _lines(out, level + 1, "Container Port", port.get("containerPort", ""))
        _lines(out, level + 1, "Name", port.get("name", ""))
    for section in ("limits", "requests"):
        _lines(out, level, section.capitalize())
        for key in ("cpu", "memory"):
            value = dig(resources, section, key)
            if value is not None:
                _lines(out, level + 1, key, value)
    _lines(out, level, "Working Dir", container.get("workingDir", ""))


def _suspended_condition(status: WireObject) -> WireObject | None:
    for condition in status.get("typedConditions") or []:
        if condition.get("type") == "Suspended" and condition.get("status") == "True":
            return dict(condition)
    return None


def job_view(job: WireObject, events: Sequence[WireObject], now: datetime) -> str:
    """The describe-style `vcctl job view`: metadata, spec, status, then the job's events."""
    meta, spec, status = metadata(job), spec_of(job), status_of(job)
    out: list[str] = []
    _lines(out, 0, "Name", meta.get("name", ""))
    _lines(out, 0, "Namespace", meta.get("namespace", ""))
    _lines(out, 0, "Labels", _json_or_none(meta.get("labels")))
    _lines(out, 0, "Annotations", _json_or_none(meta.get("annotations")))
    _lines(out, 0, "API Version", job.get("apiVersion", ""))
    _lines(out, 0, "Kind", job.get("kind", ""))
    _lines(out, 0, "Metadata")
    _lines(out, 1, "Creation Timestamp", meta.get("creationTimestamp", ""))
    _lines(out, 1, "Generate Name", meta.get("generateName", ""))
    _lines(out, 1, "Generation", meta.get("generation", ""))
    _lines(out, 1, "Resource Version", meta.get("resourceVersion", ""))
    _lines(out, 1, "UID", meta.get("uid", ""))
    _lines(out, 0, "Spec")
    _lines(out, 1, "Min Available", spec.get("minAvailable", ""))
    _lines(out, 1, "Plugins")
    # Every plugin of the job with its arguments (vcctl shows only env and ssh); one vcjob does
    # not know (shared.plugins) is said to be ignored, as the controller ignores it.
    for plugin, arguments in (spec.get("plugins") or {}).items():
        shown = json.dumps(arguments)
        if plugins.get(plugin) is None:
            shown += UNKNOWN_PLUGIN
        _lines(out, 2, plugin.capitalize(), shown)
    _lines(out, 1, "Queue", spec.get("queue", ""))
    _lines(out, 1, "Scheduler Name", spec.get("schedulerName", ""))
    _lines(out, 1, "Tasks")
    for task in spec.get("tasks") or []:
        _lines(out, 2, "Name", task.get("name", ""))
        _lines(out, 2, "Replicas", task.get("replicas", ""))
        _lines(out, 2, "Template")
        pod = spec_of(task.get("template"))
        _lines(out, 3, "Spec")
        _lines(out, 4, "Containers")
        for container in pod.get("containers") or []:
            _container(out, container, 5)
        _lines(out, 4, "Image Pull Secrets", _json_or_none(pod.get("imagePullSecrets")))
        _lines(out, 4, "Restart Policy", pod.get("restartPolicy", ""))
    _lines(out, 0, "Status")
    for key in ("pending", "running", "succeeded", "failed", "terminating", "unknown"):
        if status.get(key):
            _lines(out, 1, key.capitalize(), status[key])
    if status.get("minAvailable"):
        _lines(out, 1, "Min Available", status["minAvailable"])
    if status.get("retryCount"):
        _lines(out, 1, "Retry Count", status["retryCount"])
    _lines(out, 1, "State")
    _lines(out, 2, "Phase", state_phase(status))
    suspended = _suspended_condition(status)
    if suspended is not None:
        # Why a suspended job waits (Kueue's reason when Kueue queues it).
        _lines(out, 1, "Suspended", suspended.get("message", ""))
    if status.get("controlledResources"):
        _lines(out, 1, "Controlled Resources", json.dumps(status["controlledResources"]))
    if not events:
        out.append("Events: \t<none>")
        return "\n".join(out)
    out.append("Events:")
    header = ["Type", "Reason", "Age", "From", "Message"]
    rows = [header, ["-" * len(h) for h in header]]
    for event in events:
        count = int(event.get("count") or 1)
        age = _age(event.get("lastTimestamp") or event.get("eventTime"), now)
        if count > 1:
            age = f"{age} (x{count} over {_age(event.get('firstTimestamp'), now)})"
        source = dig(event, "source", "component") or event.get("reportingComponent", "")
        rows.append(
            [
                str(event.get("type", "")),
                str(event.get("reason", "")),
                age,
                str(source),
                str(event.get("message", "")),
            ]
        )
    widths = [max(len(r[i]) for r in rows) + 2 for i in range(len(header))]
    for row in rows:
        out.append("  " + _row(list(zip(row, widths, strict=True))))
    return "\n".join(out)
