"""The chart's webhook, end to end on the local control plane: the chart is installed, the real
`vcjob webhook` process runs with the exact arguments of the chart's Deployment (self-managed
certificates), and the chart's own `helm test` script gets the webhook's denial through the API
server, which calls the webhook over TLS trusting only the caBundle the webhook patched in."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from localcluster.testing import LocalCluster, free_port, tools_env, vcjob_executable
from localcluster.tools import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHART = str(PROJECT_ROOT / "charts" / "vcjob")
NAMESPACE = "vcjob-stack"
RELEASE = "stack"
STARTUP_TIMEOUT = 30.0


def rendered(helm: Any, *options: str) -> list[dict[str, Any]]:
    out = helm("template", RELEASE, CHART, "-n", NAMESPACE, *options).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def with_flag(args: list[str], flag: str, value: str) -> list[str]:
    """Replace the value of `flag` (which must be there)."""
    assert flag in args, f"{flag} missing from the chart's arguments {args}"
    index = args.index(flag)
    return [*args[: index + 1], value, *args[index + 2 :]]


@pytest.fixture
def webhook_process(
    cluster: LocalCluster, helm: Any, tmp_path: Path
) -> Iterator[tuple[list[dict[str, Any]], Path, subprocess.Popen[bytes]]]:
    port = free_port()
    # The local API server reaches a Service on 127.0.0.1 at the Service's port.
    options = [
        "--set", f"webhook.service.port={port}",
        "--set", "crds.enabled=false",
        "--set", "queue.createDefault=false",
    ]  # fmt: skip
    helm("install", RELEASE, CHART, "-n", NAMESPACE, "--create-namespace", *options)
    docs = rendered(helm, *options)
    deployment = next(
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-webhook")
    )
    args = list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])
    health = free_port()
    args = with_flag(args, "--port", str(port))
    args = with_flag(args, "--health-port", str(health))
    args = with_flag(args, "--metrics-port", str(free_port()))
    args = with_flag(args, "--certs-dir", str(tmp_path / "certs"))
    args += ["--host", "127.0.0.1", "--kubeconfig", str(cluster.kubeconfig), "--log-format", "text"]
    args += ["--shutdown-delay", "0"]
    log_file = tmp_path / "webhook.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            [*vcjob_executable(), *args], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            assert process.poll() is None, f"webhook exited:\n{log_file.read_text()}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{health}/readyz", timeout=1).status_code == 200:
                    break
            assert time.monotonic() < deadline, f"webhook never ready:\n{log_file.read_text()}"
            time.sleep(0.2)
        yield docs, log_file, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        helm("uninstall", RELEASE, "-n", NAMESPACE, check=False)


def test_helm_test_script_sees_the_webhook_denial(
    cluster: LocalCluster,
    webhook_process: tuple[list[dict[str, Any]], Path, subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    docs, log_file, process = webhook_process
    # The webhook stored its certificates and patched its caBundle into the chart's configurations.
    secret = json.loads(
        cluster.kubectl(
            "get", "secret", "-n", NAMESPACE, "stack-vcjob-webhook-tls", "-o", "json"
        ).stdout
    )
    assert set(secret["data"]) >= {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    config = json.loads(
        cluster.kubectl(
            "get", "validatingwebhookconfiguration", "stack-vcjob-validating-webhook", "-o", "json"
        ).stdout
    )
    assert config["webhooks"][0]["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]

    # Run the chart's `helm test` program as the test pod would (vcjob's image: this Python).
    test_pod = next(d for d in docs if d["kind"] == "Pod")
    command = [sys.executable, "-c", test_pod["spec"]["containers"][0]["args"][0]]
    assert test_pod["spec"]["containers"][0]["command"] == ["python", "-c"]
    env = tools_env()
    env["KUBECONFIG"] = str(cluster.kubeconfig)
    result = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{log_file.read_text()}"
    assert "spec.minAvailable: Invalid value: 5" in result.stdout
    assert "PASS: the webhook denied the invalid Job" in result.stdout

    # The script fails when the webhook cannot be reached, and when no webhook is registered.
    process.kill()
    process.wait(10)
    unreachable = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert unreachable.returncode == 1, unreachable.stdout
    assert "failed calling webhook" in unreachable.stdout
    cluster.kubectl("delete", "validatingwebhookconfiguration", "stack-vcjob-validating-webhook")
    cluster.kubectl("delete", "mutatingwebhookconfiguration", "stack-vcjob-mutating-webhook")
    unregistered = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert unregistered.returncode == 1, unregistered.stdout
    assert "FAIL: the invalid Job was admitted" in unregistered.stdout
