"""ray plugin: the head starts the GCS, dashboard and client server; workers join it through
the Service `<job>-head-svc`."""

from __future__ import annotations

from controller.job.decide.plugins.base import DesiredChild, JobPlugin
from controller.job.decide.podgen import child_metadata, job_labels
from shared import labels
from shared.models import TaskSpec
from shared.plugins import ray as ray_descriptor
from shared.wire import WireObject, spec_of

GCS, DASHBOARD, CLIENT = "gcs", "dashboard", "client-server"


def service_name(job_name: str) -> str:
    return ray_descriptor.DESCRIPTOR.child("Service").name(job_name)


class RayPlugin(JobPlugin):
    DESCRIPTOR = ray_descriptor.DESCRIPTOR

    @property
    def _ports(self) -> dict[str, int]:
        return {
            GCS: self.args.integer("port"),
            DASHBOARD: self.args.integer("dashboardPort"),
            CLIENT: self.args.integer("clientPort"),
        }

    def _head_host(self, head: TaskSpec) -> str:
        spec = spec_of(head.template)
        host = spec.get("hostname") or labels.pod_name(self.job.name, str(head.name), 0)
        return f"{host}.{spec.get('subdomain') or self.job.name}"

    def objects(self) -> list[DesiredChild]:
        head = self.args.string("head")
        if self.job.task(head) is None:
            return []
        service: WireObject = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": child_metadata(self.job, service_name(self.job.name)),
            "spec": {
                "type": "ClusterIP",
                "selector": {**job_labels(self.job), labels.TASK_SPEC_KEY: head},
                "ports": [
                    {"name": name, "port": port, "targetPort": name, "protocol": "TCP"}
                    for name, port in self._ports.items()
                ],
            },
        }
        return [DesiredChild(service)]

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        head = self.job.task(self.args.string("head"))
        if head is None:
            return
        ports = self._ports
        if task.name == head.name:
            container = _named(pod, self.args.string("headContainer"))
            if container is None:
                return
            existing = {p.get("containerPort") for p in container.get("ports") or []}
            for name, port in ports.items():
                if port not in existing:
                    container.setdefault("ports", []).append({"name": name, "containerPort": port})
            container["command"] = [
                "sh",
                "-c",
                "ray start --head --block --dashboard-host=0.0.0.0 "
                f"--port={ports[GCS]} --dashboard-port={ports[DASHBOARD]} "
                f"--ray-client-server-port={ports[CLIENT]}",
            ]
        elif task.name == self.args.string("worker"):
            container = _named(pod, self.args.string("workerContainer"))
            if container is None:
                return
            container["command"] = [
                "sh",
                "-c",
                f"ray start --block --address={self._head_host(head)}:{ports[GCS]}",
            ]


def _named(pod: WireObject, name: str) -> WireObject | None:
    found: WireObject | None = next(
        (c for c in pod["spec"].get("containers") or [] if c.get("name") == name), None
    )
    return found
