"""tensorflow plugin: TF_CONFIG with the cluster spec and the pod's role and index."""

from __future__ import annotations

import json

from controller.job.decide.plugins.base import JobPlugin, task_hosts
from controller.job.decide.podgen import containers, set_env
from shared.models import TaskSpec
from shared.plugins import tensorflow as tensorflow_descriptor
from shared.wire import WireObject

ROLES = ("ps", "worker", "chief", "evaluator")


class TensorflowPlugin(JobPlugin):
    DESCRIPTOR = tensorflow_descriptor.DESCRIPTOR

    def _role_tasks(self) -> dict[str, str]:
        """role → task name, from `--ps=… --worker=… --chief=… --evaluator=…`."""
        return {role: self.args.string(role) for role in ROLES}

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        tasks = self.job.spec.tasks
        if len(tasks) == 1 and tasks[0].replica_count == 1:
            return
        port = self.args.integer("port")
        role_tasks = self._role_tasks()
        cluster: dict[str, list[str]] = {}
        for role in ROLES:
            role_task = self.job.task(role_tasks[role])
            if role_task is not None:
                cluster[role] = [f"{h}:{port}" for h in task_hosts(self.job, role_task)]
        task_type = next((role for role in ROLES if role_tasks[role] == task.name), str(task.name))
        tf_config = {"cluster": cluster, "task": {"type": task_type, "index": index}}
        value = json.dumps(tf_config, separators=(",", ":"))
        for container in containers(pod["spec"], init=False):
            set_env(container, "TF_CONFIG", value)
