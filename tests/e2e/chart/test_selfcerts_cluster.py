"""Self-managed certificates against a real (local) API server: the Secret is filled, caBundle is
patched into real webhook configurations, and replicas share one certificate."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from localcluster.running import LocalCluster
from webhook.selfcerts import SelfManagedCerts, service_dns_names

pytestmark = pytest.mark.e2e

NAMESPACE = "vcjob-system"


def configurations(prefix: str) -> str:
    def config(kind: str, name: str, webhook: str, path: str) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name},
            "webhooks": [
                {
                    "name": webhook,
                    "clientConfig": {
                        "service": {"name": "vcjob-webhook", "namespace": NAMESPACE, "path": path}
                    },
                    # Nothing in these tests is a Job in this namespace: the webhooks never fire.
                    "rules": [
                        {
                            "apiGroups": ["batch.volcano.sh"],
                            "apiVersions": ["v1alpha1"],
                            "resources": ["jobs"],
                            "operations": ["CREATE"],
                        }
                    ],
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "no-such-namespace"}
                    },
                    "failurePolicy": "Ignore",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        }

    return yaml.safe_dump_all(
        [
            config(
                "MutatingWebhookConfiguration",
                f"{prefix}-mutating",
                "mutatejob.vcjob.volcano.sh",
                "/m",
            ),
            config(
                "ValidatingWebhookConfiguration",
                f"{prefix}-validating",
                "validatejob.vcjob.volcano.sh",
                "/v",
            ),
        ]
    )


def empty_secret(prefix: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{prefix}-tls", "namespace": NAMESPACE},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
        }
    )


def certs(cluster: LocalCluster, prefix: str, cert_dir: Path) -> SelfManagedCerts:
    return SelfManagedCerts(
        cluster.api_client(),
        NAMESPACE,
        f"{prefix}-tls",
        service_dns_names("vcjob-webhook", NAMESPACE),
        cert_dir,
        f"{prefix}-mutating",
        f"{prefix}-validating",
    )


def ca_bundles(cluster: LocalCluster, prefix: str) -> list[str]:
    bundles = []
    for kind, name in [
        ("mutatingwebhookconfiguration", f"{prefix}-mutating"),
        ("validatingwebhookconfiguration", f"{prefix}-validating"),
    ]:
        config = json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout)
        bundles += [w["clientConfig"].get("caBundle", "") for w in config["webhooks"]]
    return bundles


def secret_data(cluster: LocalCluster, prefix: str) -> dict[str, str]:
    secret = json.loads(
        cluster.kubectl("get", "secret", "-n", NAMESPACE, f"{prefix}-tls", "-o", "json").stdout
    )
    return dict(secret["data"])


def test_fills_the_secret_and_patches_real_configurations(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster.kubectl("apply", "-f", "-", input=configurations("one"))
    cluster.kubectl("apply", "-f", "-", input=empty_secret("one"))

    first = certs(cluster, "one", tmp_path / "first")
    first.ensure()
    data = secret_data(cluster, "one")
    assert set(data) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    assert ca_bundles(cluster, "one") == [data["ca.crt"], data["ca.crt"]]
    ca = x509.load_pem_x509_certificate(base64.b64decode(data["ca.crt"]))
    x509.load_pem_x509_certificate(first.cert_file.read_bytes()).verify_directly_issued_by(ca)

    second = certs(cluster, "one", tmp_path / "second")
    second.ensure()
    assert second.cert_file.read_bytes() == first.cert_file.read_bytes()
    assert second.key_file.read_bytes() == first.key_file.read_bytes()
    assert secret_data(cluster, "one") == data


def test_replicas_starting_together_agree_on_one_certificate(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster.kubectl("apply", "-f", "-", input=configurations("race"))
    cluster.kubectl("apply", "-f", "-", input=empty_secret("race"))
    replicas = [certs(cluster, "race", tmp_path / f"replica-{i}") for i in range(3)]
    errors: list[BaseException] = []

    def start(replica: SelfManagedCerts) -> None:
        try:
            replica.ensure()
        except BaseException as err:  # reported below with the replica's failure
            errors.append(err)

    threads = [threading.Thread(target=start, args=(r,)) for r in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    stored = base64.b64decode(secret_data(cluster, "race")["tls.crt"])
    assert all(r.cert_file.read_bytes() == stored for r in replicas)
    assert len(set(ca_bundles(cluster, "race"))) == 1
