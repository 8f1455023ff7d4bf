"""svc plugin: headless Service, hosts ConfigMap, NetworkPolicy; pod hostname and hosts env."""

from __future__ import annotations

from controller.job.decide.plugins.base import (
    DesiredChild,
    JobPlugin,
    env_task_name,
    task_hosts,
)
from controller.job.decide.podgen import (
    add_mount,
    add_volume,
    child_metadata,
    containers,
    job_labels,
    set_env,
)
from shared.models import TaskSpec
from shared.plugins import svc as svc_descriptor
from shared.wire import WireObject

HOSTS_MOUNT_PATH = "/etc/volcano"


def config_map_name(job_name: str) -> str:
    return svc_descriptor.DESCRIPTOR.child("ConfigMap").name(job_name)


def hosts_data(plugin: JobPlugin) -> dict[str, str]:
    data: dict[str, str] = {}
    for task in plugin.job.spec.tasks:
        hosts = task_hosts(plugin.job, task)
        key = env_task_name(str(task.name))
        data[f"{key}.host"] = "\n".join(hosts)
        data[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
        data[f"VC_{key.upper()}_NUM"] = str(len(hosts))
    return data


class SvcPlugin(JobPlugin):
    DESCRIPTOR = svc_descriptor.DESCRIPTOR

    @property
    def _flags(self) -> dict[str, bool]:
        return {
            "publish": self.args.boolean("publish-not-ready-addresses"),
            "no_policy": self.args.boolean("disable-network-policy"),
            "hosts_env": self.args.boolean("inject-hosts-env"),
        }

    def objects(self) -> list[DesiredChild]:
        job = self.job
        selector = job_labels(job)
        config_map: WireObject = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": child_metadata(job, config_map_name(job.name)),
            "data": hosts_data(self),
        }
        service: WireObject = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": child_metadata(job, self.descriptor.child("Service").name(job.name)),
            "spec": {
                "clusterIP": "None",
                "selector": dict(selector),
                "publishNotReadyAddresses": self._flags["publish"],
            },
        }
        out = [DesiredChild(config_map, ("data",)), DesiredChild(service)]
        if not (self.ctx.settings.disable_network_policy or self._flags["no_policy"]):
            policy: WireObject = {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": child_metadata(
                    job, self.descriptor.child("NetworkPolicy").name(job.name)
                ),
                "spec": {
                    "podSelector": {"matchLabels": dict(selector)},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": dict(selector)}}]}],
                    "policyTypes": ["Ingress"],
                },
            }
            out.append(DesiredChild(policy))
        return out

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        spec = pod["spec"]
        if not spec.get("hostname"):
            spec["hostname"] = pod["metadata"]["name"]
        if not spec.get("subdomain"):
            spec["subdomain"] = self.job.name
        cm_name = config_map_name(self.job.name)
        add_volume(spec, {"name": cm_name, "configMap": {"name": cm_name}})
        for container in containers(spec):
            add_mount(container, {"name": cm_name, "mountPath": HOSTS_MOUNT_PATH})
            if not self._flags["hosts_env"]:
                continue
            for other in self.job.spec.tasks:
                key = env_task_name(str(other.name)).upper()
                for suffix in ("HOSTS", "NUM"):
                    env_name = f"VC_{key}_{suffix}"
                    set_env(
                        container,
                        env_name,
                        valueFrom={"configMapKeyRef": {"name": cm_name, "key": env_name}},
                    )
