"""`vcjob local up --kueue`: Kueue's configuration, its CRDs from the pinned module, and the
certificate copied out of its Secret."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from localcluster import kueue, kueuebin


def test_configuration_lists_vcjob_among_the_external_frameworks(tmp_path: Path) -> None:
    config = kueue.configuration(health_port=1234, webhook_port=5678, cert_dir=tmp_path)
    assert config["integrations"]["externalFrameworks"] == ["Job.v1alpha1.batch.volcano.sh"]
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:1234"
    assert config["webhook"] == {"host": "127.0.0.1", "port": 5678, "certDir": str(tmp_path)}
    assert config["metrics"]["bindAddress"] == "0"
    assert config["leaderElection"] == {"leaderElect": False}


def test_the_certificate_is_copied_once_kueue_wrote_it(tmp_path: Path) -> None:
    assert not kueue.mount_certificate({"data": {}}, tmp_path)
    data = {
        name: base64.b64encode(name.encode()).decode() for name in ("tls.crt", "tls.key", "ca.crt")
    }
    assert kueue.mount_certificate({"data": data}, tmp_path)
    assert (tmp_path / "tls.key").read_bytes() == b"tls.key"
    assert (tmp_path / "tls.key").stat().st_mode & 0o077 == 0


@pytest.mark.skipif(kueuebin.find() is None, reason="Kueue's manager is not built (make kueue)")
def test_crds_come_from_the_module_with_conversion_on_loopback() -> None:
    crds = {c["metadata"]["name"]: c for c in kueue.crds(4321)}
    assert "workloads.kueue.x-k8s.io" in crds
    conversion = crds["workloads.kueue.x-k8s.io"]["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook"
    assert conversion["webhook"]["clientConfig"] == {"url": "https://127.0.0.1:4321/convert"}
