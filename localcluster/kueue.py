"""`vcjob local up --kueue`: Kueue beside vcjob, as docs/kueue.md describes it for a real cluster.

Kueue's CRDs come from its pinned module (`localcluster.kueuebin.crd_files`); its manager (built
by `make kueue`) runs as a child of `vcjob local up` with a configuration that lists vcjob's Job
among `integrations.externalFrameworks`. Everything listens on loopback: health on its own
port, the webhook server on another (its certificate issued by Kueue itself; Kueue's admission
webhooks are not registered with the API server here), metrics and the visibility server off.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Final

import yaml

from localcluster import kueuebin
from localcluster.bootstrap import YAML_LOADER

# Kueue's name for vcjob's Job among its external frameworks: Kind.version.group.
EXTERNAL_FRAMEWORK: Final = "Job.v1alpha1.batch.volcano.sh"
NAMESPACE: Final = "kueue-system"
WEBHOOK_SECRET: Final = "kueue-webhook-server-cert"  # noqa: S105 - a Secret's name
PATCHES: Final = Path("config") / "components" / "crd" / "patches"


def configuration(
    *,
    health_port: int,
    webhook_port: int,
    cert_dir: Path,
    multikueue: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for a local cluster; `multikueue`:
    its `multiKueue` section, on a MultiKueue manager."""
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        # Kueue issues its webhook server's certificate itself (a Secret in kueue-system,
        # written to certDir); without it, it wants metrics certificates under /etc/kueue.
        "internalCertManagement": {"enable": True},
        "manageJobsWithoutQueueName": False,
        "integrations": {
            "frameworks": ["batch/job"],
            "externalFrameworks": [EXTERNAL_FRAMEWORK],
        },
    }
    if multikueue is not None:
        config["multiKueue"] = multikueue
    return config


def cert_dir_of(folder: Path) -> Path:
    return folder / "certs"


def prepare(
    folder: Path,
    *,
    health_port: int,
    webhook_port: int,
    multikueue: dict[str, Any] | None = None,
) -> Path:
    """Write the configuration under `folder`; the path of the configuration file."""
    cert_dir = cert_dir_of(folder)
    cert_dir.mkdir(parents=True, exist_ok=True)
    config = folder / "kueue-config.yaml"
    config.write_text(
        yaml.safe_dump(
            configuration(
                health_port=health_port,
                webhook_port=webhook_port,
                cert_dir=cert_dir,
                multikueue=multikueue,
            )
        )
    )
    return config


def webhook_secret() -> dict[str, Any]:
    """The Secret Kueue keeps its webhook certificate in: it must exist, Kueue fills it."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": WEBHOOK_SECRET, "namespace": NAMESPACE},
    }


def mount_certificate(secret: dict[str, Any], cert_dir: Path) -> bool:
    """Do what the kubelet's Secret volume does for Kueue's pod: write the certificate Kueue put
    in its Secret into certDir. False while the Secret holds none yet."""
    data = secret.get("data") or {}
    if not (data.get("tls.crt") and data.get("tls.key")):
        return False
    cert_dir.mkdir(parents=True, exist_ok=True)
    for name, value in data.items():
        target = cert_dir / name
        target.touch(mode=0o600)
        target.write_bytes(base64.b64decode(value))
    return True


def manager_argv(binary: Path, kubeconfig: Path, config: Path) -> list[str]:
    # The visibility server would listen on every address: it is not needed here.
    return [
        str(binary),
        "--kubeconfig", str(kubeconfig),
        "--config", str(config),
        "--feature-gates", "VisibilityOnDemand=false",
    ]  # fmt: skip


def crds(webhook_port: int) -> list[dict[str, Any]]:
    """Kueue's CRDs, read from its module in Go's module cache, with the conversion webhooks of
    the module's `webhook_in_*` patches pointed at the manager's webhook server on loopback
    (Kueue writes their caBundle, and waits for that before it is ready)."""
    module = kueuebin.module_dir()
    out: list[dict[str, Any]] = []
    for path in kueuebin.crd_files():
        with path.open() as stream:
            for crd in (d for d in yaml.load_all(stream, Loader=YAML_LOADER) if d):
                patch = module / PATCHES / f"webhook_in_{crd['spec']['names']['plural']}.yaml"
                if patch.is_file():
                    conversion = yaml.safe_load(patch.read_text())["spec"]["conversion"]
                    client = conversion["webhook"]["clientConfig"]
                    path_ = client.pop("service").get("path", "/convert")
                    client["url"] = f"https://127.0.0.1:{webhook_port}{path_}"
                    crd["spec"]["conversion"] = conversion
                out.append(crd)
    return out
