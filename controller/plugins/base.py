"""What a job plugin is: child objects it wants, and what it changes in every pod."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.model import PlanSettings
from shared import labels
from shared.models import Job, TaskSpec

WireObject = dict[str, Any]


@dataclass(frozen=True)
class PluginContext:
    job: Job
    args: Sequence[str]
    settings: PlanSettings
    # Children that exist now, by (kind, name), as in `Observed.children`.
    children: Mapping[tuple[str, str], WireObject]
    # What the planner remembered for this job (ssh key material not yet stored in a Secret).
    memory: Mapping[str, Any]


@dataclass(frozen=True)
class DesiredChild:
    """A child object the plugin wants; `managed` are the top-level keys kept in line with the
    desired state (an empty tuple: create when missing, never update)."""

    obj: WireObject
    managed: tuple[str, ...] = ()


class JobPlugin:
    """Default hooks do nothing; plugins override what they need."""

    name = ""

    def __init__(self, ctx: PluginContext) -> None:
        self.ctx = ctx
        self.job = ctx.job

    def objects(self) -> list[DesiredChild]:
        return []

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        return None

    def remember(self) -> dict[str, Any]:
        """Entries to keep in the planner's memory until the next reconcile."""
        return {}


@dataclass
class Flags:
    values: dict[str, str] = field(default_factory=dict)

    def text(self, name: str, default: str) -> str:
        return self.values.get(name, default)

    def number(self, name: str, default: int) -> int:
        try:
            return int(self.values.get(name, default))
        except ValueError:
            return default

    def boolean(self, name: str, default: bool = False) -> bool:
        raw = self.values.get(name)
        if raw is None:
            return default
        return raw.lower() in ("", "true", "1", "t", "yes")


def parse_flags(args: Sequence[str], booleans: frozenset[str] = frozenset()) -> Flags:
    """Go `flag`-style arguments: `-name`, `--name`, `--name=value`, `--name value`.

    Anything that is not a flag is ignored (Volcano logs and skips it)."""
    values: dict[str, str] = {}
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if not arg.startswith("-"):
            continue
        body = arg.lstrip("-")
        if "=" in body:
            key, value = body.split("=", 1)
            values[key] = value
        elif body in booleans:
            values[body] = "true"
        elif i < len(items) and not items[i].startswith("-"):
            values[body] = items[i]
            i += 1
        else:
            values[body] = "true"
    return Flags(values)


def task_hosts(job: Job, task: TaskSpec) -> list[str]:
    """DNS names of a task's pods through the job's headless Service: `<pod>.<job>`.

    A template that fixes hostname/subdomain gives one host (Volcano's rule)."""
    spec = (task.template or {}).get("spec") or {}
    hostname, subdomain = spec.get("hostname"), spec.get("subdomain")
    if hostname or subdomain:
        return [f"{hostname or job.name}.{subdomain or job.name}"]
    return [
        f"{labels.pod_name(job.name, str(task.name), i)}.{job.name}"
        for i in range(task.replica_count)
    ]


def env_task_name(task_name: str) -> str:
    return task_name.replace("-", "_")
