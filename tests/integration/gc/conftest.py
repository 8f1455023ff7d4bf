"""A local API server in a subprocess, with the garbage collector and namespace controller."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from localcluster.controllers import start_controllers
from localcluster.controllers.client import ApiClient, load_kubeconfig
from localcluster.tools import tool_path

STARTUP_SECONDS = 30.0


@dataclass
class Cluster:
    kubeconfig: Path
    api: ApiClient

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        kubectl = tool_path("kubectl")
        assert kubectl is not None, (
            "kubectl is not installed (python -m localcluster.tools install)"
        )
        done = subprocess.run(
            [str(kubectl), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done.stdout + done.stderr

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        out = self.kubectl("create", "-o", "json", "-f", "-", stdin=json.dumps(obj))
        created: dict[str, Any] = json.loads(out)
        return created

    def get(self, *args: str) -> dict[str, Any] | None:
        done = self.kubectl("get", "-o", "json", "--ignore-not-found", *args)
        return json.loads(done) if done.strip() else None


def _wait_for_kubeconfig(process: subprocess.Popen[bytes], path: Path, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the API server exited: {log.read_text()[-2000:]}")
        if path.exists():
            try:
                with ApiClient(load_kubeconfig(path), timeout=2.0) as client:
                    client.get("/version")
                    return
            except (httpx.HTTPError, ValueError, OSError):
                pass
        time.sleep(0.1)
    raise RuntimeError(f"the API server did not start: {log.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("gc-cluster")
    log = workdir / "apiserver.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "localcluster.apiserver", "--port", "0", "--dir", str(workdir)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    stop = threading.Event()
    threads: list[threading.Thread] = []
    kubeconfig = workdir / "kubeconfig"
    try:
        _wait_for_kubeconfig(process, kubeconfig, log)
        threads = start_controllers(kubeconfig, stop)
        with ApiClient(load_kubeconfig(kubeconfig)) as api:
            yield Cluster(kubeconfig, api)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
