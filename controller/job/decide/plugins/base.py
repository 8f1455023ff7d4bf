"""What a job plugin does in the controller: child objects it wants, and what it changes in every
pod. What the plugin is (name, flags, the children and memory it owns) is its descriptor in
`shared.plugins`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from controller.job.decide.model import KeyPair, PlanSettings
from shared import labels
from shared import plugins as registry
from shared.models import Job, TaskSpec
from shared.plugins import PluginDescriptor
from shared.wire import WireObject, spec_of


@dataclass(frozen=True)
class PluginContext:
    job: Job
    args: Sequence[str]
    settings: PlanSettings
    # Children that exist now, by (kind, name), as in `Observed.children`.
    children: Mapping[tuple[str, str], WireObject]
    # What the planner remembered for this job (ssh key material not yet stored in a Secret).
    memory: Mapping[str, Any]
    # A fresh ssh key pair from the shell (`Observed.ssh_key`), when one was needed.
    ssh_key: KeyPair | None = None


@dataclass(frozen=True)
class DesiredChild:
    """A child object the plugin wants; `managed` are the top-level keys kept in line with the
    desired state (an empty tuple: create when missing, never update)."""

    obj: WireObject
    managed: tuple[str, ...] = ()


class JobPlugin:
    """Default hooks do nothing; plugins override what they need. A registered plugin without
    behaviour of its own in the controller runs as a plain JobPlugin."""

    # The descriptor a subclass implements (`plugins.BEHAVIOURS` is keyed by it).
    DESCRIPTOR: ClassVar[PluginDescriptor | None] = None

    def __init__(self, ctx: PluginContext, descriptor: PluginDescriptor | None = None) -> None:
        found = descriptor or self.DESCRIPTOR
        if found is None:
            raise TypeError(f"{type(self).__name__} has no plugin descriptor")
        self.descriptor = found
        self.name = found.name
        self.ctx = ctx
        self.job = ctx.job
        # Parsed in one place for webhook and controller (shared.plugins, Go flag semantics).
        self.args = registry.parse_arguments(self.name, ctx.args)

    def objects(self) -> list[DesiredChild]:
        return []

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        return None

    def remember(self) -> dict[str, Any]:
        """Entries to keep in the planner's memory until the next reconcile."""
        return {}


def task_hosts(job: Job, task: TaskSpec) -> list[str]:
    """DNS names of a task's pods through the job's headless Service: `<pod>.<job>`.

    A template that fixes hostname/subdomain gives one host (Volcano's rule)."""
    spec = spec_of(task.template)
    hostname, subdomain = spec.get("hostname"), spec.get("subdomain")
    if hostname or subdomain:
        return [f"{hostname or job.name}.{subdomain or job.name}"]
    return [
        f"{labels.pod_name(job.name, str(task.name), i)}.{job.name}"
        for i in range(task.replica_count)
    ]


def env_task_name(task_name: str) -> str:
    return task_name.replace("-", "_")
