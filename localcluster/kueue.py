"""`vcjob local up --kueue`: Kueue beside vcjob, as docs/kueue.md describes it for a real cluster.

Kueue's CRDs come from its pinned module (`localcluster.kueuebin.crd_files`); its manager (built
by `make kueue`) runs as a child of `vcjob local up` with a configuration that lists vcjob's Job
among `integrations.externalFrameworks`. Everything listens on loopback: health on its own
port, the webhook server on another (with a self-issued certificate; Kueue's admission webhooks
are not registered with the API server here), metrics and the visibility server off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

from localcluster import kueuebin
from shared import certgen

# Kueue's name for vcjob's Job among its external frameworks: Kind.version.group.
EXTERNAL_FRAMEWORK: Final = "Job.v1alpha1.batch.volcano.sh"
NAMESPACE: Final = "kueue-system"


def configuration(*, health_port: int, webhook_port: int, cert_dir: Path) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for a local cluster."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "integrations": {
            "frameworks": ["batch/job"],
            "externalFrameworks": [EXTERNAL_FRAMEWORK],
        },
    }


def prepare(folder: Path, *, health_port: int, webhook_port: int) -> Path:
    """Write the configuration and the webhook server's certificate under `folder`; the path of
    the configuration file."""
    cert_dir = folder / "certs"
    certgen.write_bundle(certgen.issue(["127.0.0.1", "localhost"]), cert_dir)
    config = folder / "kueue-config.yaml"
    config.write_text(
        yaml.safe_dump(
            configuration(health_port=health_port, webhook_port=webhook_port, cert_dir=cert_dir)
        )
    )
    return config


def manager_argv(binary: Path, kubeconfig: Path, config: Path) -> list[str]:
    # The visibility server would listen on every address: it is not needed here.
    return [
        str(binary),
        "--kubeconfig", str(kubeconfig),
        "--config", str(config),
        "--feature-gates", "VisibilityOnDemand=false",
    ]  # fmt: skip


def crds() -> list[dict[str, Any]]:
    """Kueue's CRDs, read from its module in Go's module cache."""
    out: list[dict[str, Any]] = []
    for path in kueuebin.crd_files():
        with path.open() as stream:
            out.extend(d for d in yaml.safe_load_all(stream) if d)
    return out
