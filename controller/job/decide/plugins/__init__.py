"""Job plugins, run in a fixed order: sorted by name (difference 12).

Which plugins exist is `shared.plugins`' registry; this package holds what the controller does
for each (`BEHAVIOURS`, keyed by the descriptor's name). A registered plugin without behaviour
here still runs: it owns its descriptor's children and memory, and changes nothing in pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.job.decide.model import KeyPair, PlanSettings
from controller.job.decide.plugins.base import DesiredChild, JobPlugin, PluginContext
from controller.job.decide.plugins.env import EnvPlugin
from controller.job.decide.plugins.hcclrank import HcclrankPlugin
from controller.job.decide.plugins.mpi import MpiPlugin
from controller.job.decide.plugins.pytorch import PytorchPlugin
from controller.job.decide.plugins.ray import RayPlugin
from controller.job.decide.plugins.ssh import SshPlugin
from controller.job.decide.plugins.svc import SvcPlugin
from controller.job.decide.plugins.tensorflow import TensorflowPlugin
from shared import plugins as registry
from shared.models import Job
from shared.wire import WireObject


def _name(cls: type[JobPlugin]) -> str:
    if cls.DESCRIPTOR is None:
        raise TypeError(f"{cls.__name__} has no plugin descriptor")
    return cls.DESCRIPTOR.name


BEHAVIOURS: dict[str, type[JobPlugin]] = {
    _name(cls): cls
    for cls in (
        EnvPlugin,
        HcclrankPlugin,
        MpiPlugin,
        PytorchPlugin,
        RayPlugin,
        SshPlugin,
        SvcPlugin,
        TensorflowPlugin,
    )
}

__all__ = [
    "BEHAVIOURS",
    "DesiredChild",
    "JobPlugin",
    "PluginContext",
    "build_plugins",
    "owned_children",
    "owned_memory_keys",
]


def build_plugins(
    job: Job,
    settings: PlanSettings,
    children: Mapping[tuple[str, str], WireObject],
    memory: Mapping[str, Any],
    ssh_key: KeyPair | None = None,
) -> tuple[list[JobPlugin], list[str]]:
    """The job's plugins sorted by name, and the names vcjob does not know."""
    plugins: list[JobPlugin] = []
    unknown: list[str] = []
    for name, args in sorted((job.spec.plugins or {}).items()):
        descriptor = registry.get(name)
        if descriptor is None:
            unknown.append(name)
            continue
        context = PluginContext(job, list(args or []), settings, children, memory, ssh_key)
        plugins.append(BEHAVIOURS.get(name, JobPlugin)(context, descriptor))
    return plugins, unknown


def owned_children(job_name: str) -> tuple[frozenset[str], frozenset[str]]:
    """The kinds and the names of the objects any plugin creates for job `job_name`: what goes
    when the job finishes (when the job controls it)."""
    owned = [c for d in registry.all_descriptors() for c in d.children]
    return frozenset(c.kind for c in owned), frozenset(c.name(job_name) for c in owned)


def owned_memory_keys() -> frozenset[str]:
    """The planner memory keys any plugin writes: forgotten when the job finishes."""
    return frozenset(k for d in registry.all_descriptors() for k in d.memory_keys)
