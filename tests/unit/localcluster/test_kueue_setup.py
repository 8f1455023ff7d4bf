"""`vcjob local up --kueue`: Kueue's configuration, its CRDs from the pinned module, and the
certificate copied out of its Secret."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from localcluster import kueue, kueuebin, multikueue
from shared import quantity


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


def test_a_multikueue_manager_lists_vcjob_among_multikueues_external_frameworks(
    tmp_path: Path,
) -> None:
    section = multikueue.configuration_section("15s")
    config = kueue.configuration(
        health_port=1, webhook_port=2, cert_dir=tmp_path, multikueue=section
    )
    assert config["multiKueue"] == {
        "externalFrameworks": [{"name": "Job.v1alpha1.batch.volcano.sh"}],
        "workerLostTimeout": "15s",
    }
    assert "workerLostTimeout" not in multikueue.configuration_section(None)
    plain = kueue.configuration(health_port=1, webhook_port=2, cert_dir=tmp_path)
    assert "multiKueue" not in plain


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("w1", "expected NAME=DIR"),
        ("w1=", "expected NAME=DIR"),
        ("W_1=/x", "DNS label"),
        ("-w=/x", "DNS label"),
    ],
)
def test_a_bad_worker_says_what_is_wrong(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        multikueue.parse_worker(text)


def test_worker_names_must_differ() -> None:
    workers = [multikueue.parse_worker("w=/a"), multikueue.parse_worker("w=/b")]
    with pytest.raises(ValueError, match="must differ: w"):
        multikueue.check_workers(workers)


def test_the_manager_objects_chain_clusters_config_check_and_queue() -> None:
    workers = [multikueue.parse_worker("w1=/a"), multikueue.parse_worker("w2=/b")]
    objects = {
        (obj["kind"], obj["metadata"]["name"]): obj
        for _, obj in multikueue.manager_objects(workers)
    }
    cluster = objects[("MultiKueueCluster", "w1")]
    assert cluster["spec"]["clusterSource"]["kubeConfig"] == {
        "locationType": "Secret",
        "location": "multikueue-w1",
    }
    assert objects[("MultiKueueConfig", "vcjob-multikueue")]["spec"]["clusters"] == ["w1", "w2"]
    check = objects[("AdmissionCheck", "vcjob-multikueue")]["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/multikueue"
    assert check["parameters"]["name"] == "vcjob-multikueue"
    queue = objects[("ClusterQueue", "multikueue")]["spec"]
    assert queue["admissionChecksStrategy"] == {"admissionChecks": [{"name": "vcjob-multikueue"}]}
    assert objects[("LocalQueue", "multikueue")]["metadata"]["namespace"] == "default"
    secret = multikueue.kubeconfig_secret(workers[0], "apiVersion: v1\n")
    assert secret["metadata"] == {"name": "multikueue-w1", "namespace": "kueue-system"}
    assert secret["stringData"] == {"kubeconfig": "apiVersion: v1\n"}


def test_a_workers_quota_is_its_nodes_allocatable_cpu_and_memory() -> None:
    nodes = [
        {"status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
        {"status": {"allocatable": {"cpu": "500m", "memory": "1Gi"}}},
    ]
    quota = multikueue.nodes_quota(nodes)
    assert set(quota) == {"cpu", "memory"}
    assert quantity.parse(quota["cpu"]) == quantity.parse("8500m")
    assert quantity.parse(quota["memory"]) == quantity.parse("33Gi")
    assert multikueue.queue_objects(quota)[1][1]["spec"].get("admissionChecksStrategy") is None
