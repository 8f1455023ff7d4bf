"""Job plugins, run in a fixed order: sorted by name (fix 12)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.job.decide.model import KeyPair, PlanSettings, WireObject
from controller.job.decide.plugins.base import DesiredChild, JobPlugin, PluginContext
from controller.job.decide.plugins.env import EnvPlugin
from controller.job.decide.plugins.hcclrank import HcclrankPlugin
from controller.job.decide.plugins.mpi import MpiPlugin
from controller.job.decide.plugins.pytorch import PytorchPlugin
from controller.job.decide.plugins.ray import RayPlugin
from controller.job.decide.plugins.ssh import SshPlugin
from controller.job.decide.plugins.svc import SvcPlugin
from controller.job.decide.plugins.tensorflow import TensorflowPlugin
from shared.models import Job

REGISTRY: dict[str, type[JobPlugin]] = {
    cls.name: cls
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

__all__ = ["REGISTRY", "DesiredChild", "JobPlugin", "PluginContext", "build_plugins"]


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
        cls = REGISTRY.get(name)
        if cls is None:
            unknown.append(name)
            continue
        context = PluginContext(job, list(args or []), settings, children, memory, ssh_key)
        plugins.append(cls(context))
    return plugins, unknown
