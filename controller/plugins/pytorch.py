"""pytorch plugin: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and a RANK unique per pod."""

from __future__ import annotations

from controller.plugins.base import JobPlugin, WireObject, parse_flags
from controller.podgen import add_port, containers, set_env
from shared import labels
from shared.models import TaskSpec

PORT_NAME = "pytorchjob-port"


class PytorchPlugin(JobPlugin):
    name = "pytorch"

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        flags = parse_flags(self.ctx.args)
        master_name = flags.text("master", "master")
        worker_name = flags.text("worker", "worker")
        port = flags.number("port", 23456)
        master = self.job.task(master_name)
        if master is None or task.name not in (master_name, worker_name):
            return
        worker = self.job.task(worker_name)
        masters = master.replica_count
        world = masters + (worker.replica_count if worker is not None else 0)
        # Masters take ranks 0..m-1 and workers m.. (Volcano gives RANK 0 to every master).
        rank = index if task.name == master_name else masters + index
        address = f"{labels.pod_name(self.job.name, master_name, 0)}.{self.job.name}"
        for container in containers(pod["spec"], init=False):
            set_env(container, "MASTER_ADDR", address)
            set_env(container, "MASTER_PORT", str(port))
            set_env(container, "WORLD_SIZE", str(world))
            set_env(container, "RANK", str(rank))
            add_port(container, PORT_NAME, port)
