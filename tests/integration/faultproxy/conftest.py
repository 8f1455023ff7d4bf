"""A real etcd + kube-apiserver on loopback for the fault proxy's tests, started with the same
arguments, certificates and static admin token as `vcjob local up` (localcluster.controlplane).
The proxy serves with the API server's own certificate (127.0.0.1 and localhost, same CA)."""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from localcluster import controlplane, kubebin
from localcluster.running import free_port
from tests.support.polling import wait_until

STARTUP_TIMEOUT = 90.0


@dataclass(frozen=True)
class ControlPlane:
    url: str  # kube-apiserver, https://127.0.0.1:PORT
    ca: Path
    token: str
    proxy_cert: Path  # a serving certificate for a proxy in front of it, signed by `ca`
    proxy_key: Path


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _apiserver_ready(url: str, ca: Path, token: str) -> bool:
    try:
        answer = httpx.get(
            f"{url}/readyz",
            verify=ssl.create_default_context(cafile=str(ca)),
            headers={"Authorization": f"Bearer {token}"},
            timeout=2.0,
        )
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    directory = tmp_path_factory.mktemp("controlplane")
    pki = controlplane.write_pki(directory / "pki")
    token = pki.admin_token.read_text().strip()
    etcd_port, peer_port, secure_port = free_port(), free_port(), free_port()
    settings = controlplane.ApiServerSettings(port=secure_port, etcd_port=etcd_port, pki=pki)
    commands = {
        "etcd": [
            str(kubebin.require("etcd")),
            *controlplane.etcd_args(directory / "etcd", etcd_port, peer_port),
        ],
        "kube-apiserver": [
            str(kubebin.require("kube-apiserver")),
            *controlplane.apiserver_args(settings),
        ],
    }
    processes: list[subprocess.Popen[bytes]] = []
    logs = {name: directory / f"{name}.log" for name in commands}
    try:
        for name, argv in commands.items():
            with logs[name].open("wb") as out:
                processes.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))
        url = f"https://127.0.0.1:{secure_port}"

        def ready() -> bool:
            for name, process in zip(logs, processes, strict=True):
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode}")
            return _apiserver_ready(url, pki.ca_cert, token)

        try:
            wait_until("kube-apiserver ready", ready, STARTUP_TIMEOUT)
        except BaseException:
            for name, log in logs.items():
                sys.stderr.write(f"--- {name} ---\n{log.read_text(errors='replace')[-4000:]}\n")
            raise
        yield ControlPlane(url, pki.ca_cert, token, pki.serving_cert, pki.serving_key)
    finally:
        for process in reversed(processes):
            _stop(process)
