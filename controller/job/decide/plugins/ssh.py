"""ssh plugin: one key pair per job in Secret `<job>-ssh`, mounted at /root/.ssh (mode 0600).

A key pair is needed only while the Secret does not exist (`needs_generated_key`); the I/O shell
then generates one (`controller.job.shell.sshkeys`) and hands it over in `Observed.ssh_key`, so
planning stays pure. Until the Secret is stored the planner keeps that material in its memory, so a
re-plan after a failed apply creates the same Secret. Afterwards the Secret is the only copy and
is never regenerated (difference 14)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from controller.job.decide.plugins.base import DesiredChild, JobPlugin, task_hosts
from controller.job.decide.podgen import add_mount, add_volume, child_metadata, containers
from shared.models import TaskSpec
from shared.plugins import ssh as ssh_descriptor
from shared.wire import WireObject, metadata, spec_of

DEFAULT_SSH_PATH = "/root/.ssh"
DEFAULT_SSH_PORT = 22
PRIVATE_KEY = "id_rsa"
PUBLIC_KEY = "id_rsa.pub"
AUTHORIZED_KEYS = "authorized_keys"
CONFIG = "config"
MEMORY_KEY = ssh_descriptor.MEMORY_KEY


def secret_name(job_name: str) -> str:
    return ssh_descriptor.DESCRIPTOR.child("Secret").name(job_name)


def _secret_data(secret: Mapping[str, Any] | None) -> Mapping[str, Any]:
    data = secret.get("data") if secret is not None else None
    return data if isinstance(data, Mapping) else {}


def _stored_key(secret: Mapping[str, Any] | None) -> bool:
    data = _secret_data(secret)
    return PRIVATE_KEY in data and PUBLIC_KEY in data


def needs_generated_key(
    job: Mapping[str, Any],
    children: Mapping[tuple[str, str], Mapping[str, Any]],
    memory: Mapping[str, Any] | None,
) -> bool:
    """Whether planning `job` (wire form) needs a fresh key pair: it has the ssh plugin without
    `--ssh-private-key`, its Secret holds no key, and no generated key is remembered."""
    plugins = spec_of(job).get("plugins") or {}
    if ssh_descriptor.DESCRIPTOR.name not in plugins:
        return False
    name = str(metadata(job).get("name"))
    if _stored_key(children.get(("Secret", secret_name(name)))):
        return False
    if ssh_descriptor.DESCRIPTOR.parse(list(plugins[ssh_descriptor.DESCRIPTOR.name] or [])).string(
        "ssh-private-key"
    ):
        return False
    remembered = (memory or {}).get(MEMORY_KEY) or {}
    return not (remembered.get("private") and remembered.get("public"))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode()


class SshPlugin(JobPlugin):
    DESCRIPTOR = ssh_descriptor.DESCRIPTOR

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.path = self.args.string("ssh-key-file-path")
        self._given_private = self.args.string("ssh-private-key")
        self._given_public = self.args.string("ssh-public-key")
        port = self.args.integer("ssh-port")
        # Volcano falls back to 22 for a port outside 1..65535.
        self.port = port if 0 < port <= 65535 else DEFAULT_SSH_PORT
        self._generated: dict[str, str] = {}

    def _key_pair(self) -> tuple[str, str]:
        existing = self.ctx.children.get(("Secret", secret_name(self.job.name)))
        data = _secret_data(existing)
        if PRIVATE_KEY in data and PUBLIC_KEY in data:
            return _unb64(data[PRIVATE_KEY]), _unb64(data[PUBLIC_KEY])
        # As in Volcano, a given private key is used with whatever public key came with it.
        if self._given_private:
            return self._given_private, self._given_public
        remembered = self.ctx.memory.get(MEMORY_KEY) or {}
        if remembered.get("private") and remembered.get("public"):
            return str(remembered["private"]), str(remembered["public"])
        if self.ctx.ssh_key is None:
            # The shell asks `needs_generated_key` before every reconcile: a bug, not an input.
            raise ValueError(f"job {self.job.name}: the ssh plugin was given no key pair")
        self._generated = {"private": self.ctx.ssh_key.private, "public": self.ctx.ssh_key.public}
        return self._generated["private"], self._generated["public"]

    def _config(self) -> str:
        lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
        for task in self.job.spec.tasks:
            for host in task_hosts(self.job, task):
                short = host.split(".", 1)[0]
                lines += [f"Host {short}", f"  HostName {host}", f"  Port {self.port}"]
        return "\n".join(lines) + "\n"

    def objects(self) -> list[DesiredChild]:
        private, public = self._key_pair()
        secret: WireObject = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": child_metadata(self.job, secret_name(self.job.name)),
            "type": "Opaque",
            "data": {
                PRIVATE_KEY: _b64(private),
                PUBLIC_KEY: _b64(public),
                AUTHORIZED_KEYS: _b64(public),
                CONFIG: _b64(self._config()),
            },
        }
        existing = self.ctx.children.get(("Secret", secret_name(self.job.name)))
        has_keys = PRIVATE_KEY in _secret_data(existing)
        # A Secret without key material is not ours to rewrite: new keys every round would loop.
        return [DesiredChild(secret, ("data",) if existing is None or has_keys else ())]

    def remember(self) -> dict[str, Any]:
        exists = ("Secret", secret_name(self.job.name)) in self.ctx.children
        if exists:
            return {}
        remembered = self.ctx.memory.get(MEMORY_KEY)
        if self._generated:
            return {MEMORY_KEY: dict(self._generated)}
        return {MEMORY_KEY: dict(remembered)} if remembered else {}

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        name = secret_name(self.job.name)
        mode = 0o600 if self.path == DEFAULT_SSH_PATH else 0o644
        items = [
            {"key": k, "path": f".ssh/{k}"}
            for k in (PRIVATE_KEY, PUBLIC_KEY, AUTHORIZED_KEYS, CONFIG)
        ]
        add_volume(
            pod["spec"],
            {"name": name, "secret": {"secretName": name, "defaultMode": mode, "items": items}},
        )
        for container in containers(pod["spec"]):
            add_mount(container, {"name": name, "mountPath": self.path, "subPath": ".ssh"})
