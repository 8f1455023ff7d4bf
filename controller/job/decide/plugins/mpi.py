"""mpi plugin: MPI_HOST (the workers' hosts) on the master, the ssh port on every pod."""

from __future__ import annotations

from controller.job.decide.plugins.base import JobPlugin, task_hosts
from controller.job.decide.podgen import add_port, containers, set_env
from shared.models import TaskSpec
from shared.plugins import mpi as mpi_descriptor
from shared.wire import WireObject

PORT_NAME = "mpijob-port"


class MpiPlugin(JobPlugin):
    DESCRIPTOR = mpi_descriptor.DESCRIPTOR

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        master_name = self.args.string("master")
        worker_name = self.args.string("worker")
        port = self.args.integer("port")
        if task.name == master_name:
            worker = self.job.task(worker_name)
            hosts = task_hosts(self.job, worker) if worker is not None else []
            for container in containers(pod["spec"]):
                set_env(container, "MPI_HOST", ",".join(hosts))
        for container in containers(pod["spec"], init=False):
            add_port(container, PORT_NAME, port)
