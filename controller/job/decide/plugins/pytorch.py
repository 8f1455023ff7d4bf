"""pytorch plugin: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and a RANK unique per pod; optionally a
`wait-for-master` init container in worker pods."""

from __future__ import annotations

from controller.job.decide.plugins.base import JobPlugin
from controller.job.decide.podgen import add_port, containers, set_env
from shared import labels
from shared.models import Job, TaskSpec
from shared.plugins import pytorch as pytorch_descriptor
from shared.wire import WireObject, spec_of

PORT_NAME = "pytorchjob-port"
WAIT_CONTAINER = "wait-for-master"


def master_address(job: Job, master: TaskSpec) -> str:
    """The master's DNS name: its template's hostname/subdomain, else `<job>-<master>-0.<job>`."""
    spec = spec_of(master.template)
    host = spec.get("hostname") or labels.pod_name(job.name, str(master.name), 0)
    return f"{host}.{spec.get('subdomain') or job.name}"


def wait_script(address: str, port: int, timeout: int) -> str:
    """Poll the master's port every 2 s (`nc -z`, else /dev/tcp); fail at the timeout."""
    probe = (
        f"if command -v nc >/dev/null 2>&1; then nc -z {address} {port}; "
        f"else (echo > /dev/tcp/{address}/{port}) >/dev/null 2>&1; fi"
    )
    return (
        f"start=$(date +%s); "
        f"until {probe}; do "
        f"if [ $(( $(date +%s) - start )) -ge {timeout} ]; then "
        f'echo "timed out after {timeout}s waiting for master {address}:{port}"; exit 1; fi; '
        f"sleep 2; done"
    )


def wait_container(address: str, port: int, timeout: int, image: str) -> WireObject:
    return {
        "name": WAIT_CONTAINER,
        "image": image,
        "command": ["sh", "-c", wait_script(address, port, timeout)],
    }


class PytorchPlugin(JobPlugin):
    DESCRIPTOR = pytorch_descriptor.DESCRIPTOR

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        master_name = self.args.string("master")
        worker_name = self.args.string("worker")
        port = self.args.integer("port")
        master = self.job.task(master_name)
        if master is None or task.name not in (master_name, worker_name):
            return
        worker = self.job.task(worker_name)
        masters = master.replica_count
        world = masters + (worker.replica_count if worker is not None else 0)
        # Masters take ranks 0..m-1 and workers m.. (Volcano gives RANK 0 to every master).
        rank = index if task.name == master_name else masters + index
        address = master_address(self.job, master)
        for container in containers(pod["spec"], init=False):
            set_env(container, "MASTER_ADDR", address)
            set_env(container, "MASTER_PORT", str(port))
            set_env(container, "WORLD_SIZE", str(world))
            set_env(container, "RANK", str(rank))
            add_port(container, PORT_NAME, port)
        if task.name == worker_name and self.args.boolean("wait-master-enabled"):
            inits = pod["spec"].setdefault("initContainers", [])
            if not any(c.get("name") == WAIT_CONTAINER for c in inits):
                timeout = self.args.integer("wait-master-timeout")
                image = self.args.string("wait-master-image")
                inits.append(wait_container(address, port, timeout, image))
