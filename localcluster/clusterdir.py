"""The folder of one `vcjob local up`: where its files go, the lock that keeps one cluster per
folder, the state file (`local.json`) that says what runs, and the error every start step raises."""

from __future__ import annotations

import fcntl
import json
import os
import socket
from pathlib import Path
from typing import IO, Any

import click

KUBECONFIG_FILE = "kubeconfig"
STATE_FILE = "local.json"
# Held (flock) for the life of `vcjob local up`: one cluster per folder.
LOCK_FILE = "local.lock"
LOG_DIR = "logs"
PODS_DIR = "pods"  # the node agent's pod directories (volumes, logs)
PKI_DIR = "pki"  # the control plane's certificates, keys and static tokens
ETCD_DIR = "etcd"  # etcd's data, unless --data-dir names a folder to keep it in
# Clients of the product's own processes: through the fault proxy when there is one.
COMPONENTS_KUBECONFIG_FILE = "components.kubeconfig"
WEBHOOK_DIR = "webhook"
# kubectl's discovery and HTTP cache for this cluster (KUBECACHEDIR), instead of ~/.kube/cache.
KUBE_CACHE_DIR = "kube-cache"


class StartupError(click.ClickException):
    """Something the cluster needs did not come up; the message says what and where to look."""


def lock_dir(directory: Path) -> IO[str]:
    """Take the folder's lock for as long as the returned file stays open.

    A second `vcjob local up` on the same folder would overwrite the kubeconfig and certificates
    of the first (then every request fails certificate checks); it stops here instead, before
    touching anything. The kernel drops the lock when the process ends, however it ends.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise StartupError(
            f"a local cluster is already running from {directory} (pid {holder}); "
            "stop it first or choose another --dir"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def check_port_free(port: int) -> None:
    """Fail before starting anything when the API server's port is taken."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as err:
            raise StartupError(
                f"port {port} on 127.0.0.1 is in use ({err.strerror}); "
                "pass --port 0 for any free port, or stop what listens there"
            ) from None


def read_state(directory: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((directory / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None
