"""env plugin: the pod's index as VK_TASK_INDEX and VC_TASK_INDEX."""

from __future__ import annotations

from controller.job.decide.plugins.base import JobPlugin
from controller.job.decide.podgen import containers, set_env
from shared.models import TaskSpec
from shared.plugins import env as env_descriptor
from shared.wire import WireObject


class EnvPlugin(JobPlugin):
    DESCRIPTOR = env_descriptor.DESCRIPTOR

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        for container in containers(pod["spec"]):
            set_env(container, "VK_TASK_INDEX", str(index))
            set_env(container, "VC_TASK_INDEX", str(index))
