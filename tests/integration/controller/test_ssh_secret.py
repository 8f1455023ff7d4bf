"""The ssh plugin through the controller's shell: the runner generates the key pair once, the
job's Secret holds it and keeps it."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kubeio.client import SECRETS

Kubelet = Any
pytestmark = pytest.mark.slow


def test_the_ssh_secret_gets_one_key_pair(kubelet: Kubelet, job_name: str) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 2)], plugins={"ssh": []}))
    secret = kubelet.wait(
        "the ssh Secret",
        lambda: kubelet.kube.get_or_none(SECRETS, kubelet.namespace, f"{job_name}-ssh"),
    )
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert "PRIVATE KEY" in data["id_rsa"]
    assert data["authorized_keys"] == data["id_rsa.pub"]
    assert data["id_rsa.pub"].startswith("ssh-")
    kubelet.wait("2 pods", lambda: len(kubelet.pods(job_name)) == 2)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    kubelet.hold(
        "the same key",
        lambda: (
            kubelet.kube.get(SECRETS, kubelet.namespace, f"{job_name}-ssh")["data"]["id_rsa"]
            == secret["data"]["id_rsa"]
        ),
        job_name,
    )
