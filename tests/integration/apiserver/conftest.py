"""A local API server on a free port, with a kubeconfig, and the real kubectl pointed at it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client as kube_client
from kubernetes import config as kube_config

from localcluster.apiserver.server import APIServer, APIServerConfig
from localcluster.tools import tool_path


@dataclass
class Kubectl:
    binary: str
    kubeconfig: Path
    home: Path

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, HOME=str(self.home), KUBECONFIG=str(self.kubeconfig))
        result = subprocess.run(
            [self.binary, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        env = dict(os.environ, HOME=str(self.home), KUBECONFIG=str(self.kubeconfig))
        return subprocess.Popen(
            [self.binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServer]:
    directory = tmp_path_factory.mktemp("apiserver")
    server = APIServer(
        APIServerConfig(directory=directory, port=0, history_size=200, bookmark_interval=0.5)
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kubectl(apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = tool_path("kubectl")
    if binary is None:
        raise RuntimeError("kubectl is not installed: run `python -m localcluster.tools install`")
    return Kubectl(str(binary), apiserver.kubeconfig_path, tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def api_client(apiserver: APIServer) -> Iterator[kube_client.ApiClient]:
    configuration = kube_client.Configuration()
    kube_config.load_kube_config(
        config_file=str(apiserver.kubeconfig_path), client_configuration=configuration
    )
    with kube_client.ApiClient(configuration) as client:
        yield client
