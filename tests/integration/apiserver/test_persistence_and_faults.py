"""SQLite persistence across restarts, and fault injection at the configured rate."""

from __future__ import annotations

import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from localcluster.apiserver.server import APIServer, APIServerConfig


def _client(server: APIServer) -> httpx.Client:
    context = ssl.create_default_context(cadata=server.ca_pem.decode())
    headers = {"Authorization": f"Bearer {server.config.admin_token}"}
    return httpx.Client(base_url=server.url, verify=context, timeout=10, headers=headers)


def _configmap(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": name},
    }


def test_restart_with_data_dir_keeps_objects_and_resource_versions(tmp_path: Path) -> None:
    config = APIServerConfig(directory=tmp_path / "run", data_dir=tmp_path / "data")
    first = APIServer(config)
    first.start()
    try:
        with _client(first) as client:
            for name in ("kept-1", "kept-2"):
                assert (
                    client.post(
                        "/api/v1/namespaces/default/configmaps", json=_configmap(name)
                    ).status_code
                    == 201
                )
            client.delete("/api/v1/namespaces/default/configmaps/kept-2")
            last_rv = int(
                client.get("/api/v1/namespaces/default/configmaps").json()["metadata"][
                    "resourceVersion"
                ]
            )
    finally:
        first.stop()
    second = APIServer(config)
    assert second.ca_pem == first.ca_pem, "a restart keeps the CA, so kubeconfigs stay valid"
    second.start()
    try:
        with _client(second) as client:
            listing = client.get("/api/v1/namespaces/default/configmaps").json()
            assert [i["metadata"]["name"] for i in listing["items"]] == ["kept-1"]
            # The kubernetes Service's endpoints follow the new port (a write), nothing else.
            assert last_rv <= int(listing["metadata"]["resourceVersion"]) <= last_rv + 2
            assert int(listing["items"][0]["metadata"]["resourceVersion"]) <= last_rv
            created = client.post(
                "/api/v1/namespaces/default/configmaps", json=_configmap("new")
            ).json()
            assert int(created["metadata"]["resourceVersion"]) > last_rv
    finally:
        second.stop()


def test_fault_rate_produces_errors_at_roughly_that_rate(tmp_path: Path) -> None:
    server = APIServer(
        APIServerConfig(directory=tmp_path, fault_rate=0.3, fault_seed=7, hang_seconds=0.01)
    )
    server.start()
    try:
        with _client(server) as client:
            codes = [
                client.get("/api/v1/namespaces/default/configmaps").status_code for _ in range(300)
            ]
            health = [client.get("/healthz").status_code for _ in range(50)]
            discovery = [client.get("/api/v1").status_code for _ in range(50)]
    finally:
        server.stop()
    failed = sum(1 for c in codes if c in (500, 504)) / len(codes)
    assert 0.2 < failed < 0.4, failed
    assert set(codes) <= {200, 500, 504}
    assert set(health) == {200} and set(discovery) == {200}


def test_command_line_entry_point_writes_kubeconfig_once_serving(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "localcluster.apiserver",
            "--port",
            "0",
            "--dir",
            str(tmp_path),
            "--log-format",
            "text",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        kubeconfig = tmp_path / "kubeconfig"
        deadline = time.monotonic() + 30
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        document = yaml.safe_load(kubeconfig.read_text())
        assert document["current-context"] == "vcjob-local"
        cluster = document["clusters"][0]
        assert cluster["name"] == "vcjob-local"
        assert "certificate-authority-data" in cluster["cluster"]
        port = int((tmp_path / "apiserver.port").read_text())
        assert cluster["cluster"]["server"] == f"https://127.0.0.1:{port}"
        ca = (tmp_path / "pki" / "ca.crt").read_text()
        context = ssl.create_default_context(cadata=ca)
        with httpx.Client(verify=context) as client:
            assert client.get(f"https://localhost:{port}/readyz").text == "ok"
    finally:
        process.terminate()
        process.wait(timeout=10)
