"""The real Kubernetes control plane of `vcjob local up`: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler on loopback, with envtest-like settings.

Pure builders (each component's arguments, the kubeconfig, the static token file) and the
certificates and keys they need, written under `<dir>/pki`. Starting and supervising the processes
is `up.py`'s job.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from shared import certgen

CLUSTER_NAME = "vcjob-local"
ADMIN_USER = "vcjob-admin"
ADMIN_GROUP = "system:masters"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# The names and addresses the API server's certificate covers: loopback, where it listens, and
# the `kubernetes` Service's names and first address, as on any cluster.
API_SERVER_HOSTS = (
    "127.0.0.1",
    "localhost",
    "10.0.0.1",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
# Controllers that allocate node CIDRs or attach volumes have nothing to do here.
DISABLED_CONTROLLERS = ("node-ipam-controller", "persistentvolume-attach-detach-controller")
# Those that need a cloud provider, gone from kube-controller-manager in 1.37.
CLOUD_CONTROLLERS = (
    "cloud-node-lifecycle-controller",
    "node-route-controller",
    "service-lb-controller",
)


@dataclass(frozen=True)
class Pki:
    """Where the control plane's certificates, keys and static tokens are."""

    folder: Path

    @property
    def ca_cert(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.folder / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.folder / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.folder / "apiserver.key"

    @property
    def service_account_key(self) -> Path:
        return self.folder / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.folder / "sa.pub"

    @property
    def tokens(self) -> Path:
        return self.folder / "tokens.csv"

    @property
    def admin_token(self) -> Path:
        return self.folder / "admin.token"


def write_pki(folder: Path) -> Pki:
    """A CA, the API server's serving certificate, the service-account signing key pair and an
    admin token. Kept when present, so a cluster restarted on the same folder (with its etcd
    data) keeps the tokens it issued valid."""
    pki = Pki(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if not pki.ca_cert.exists() or not pki.ca_key.exists():
        ca = certgen.issue_ca(common_name="vcjob-local-ca")
        _write(pki.ca_cert, ca.cert_pem)
        _write(pki.ca_key, ca.key_pem, private=True)
    if not pki.serving_cert.exists() or not pki.serving_key.exists():
        ca = certgen.KeyPair(pki.ca_cert.read_bytes(), pki.ca_key.read_bytes())
        serving = certgen.issue_serving(ca, list(API_SERVER_HOSTS), days=3650)
        _write(pki.serving_cert, serving.cert_pem)
        _write(pki.serving_key, serving.key_pem, private=True)
    if not pki.service_account_key.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        _write(pki.service_account_key, private, private=True)
        _write(pki.service_account_public_key, public)
    if not pki.admin_token.exists():
        _write(pki.admin_token, secrets.token_urlsafe(32).encode(), private=True)
    token = pki.admin_token.read_text().strip()
    _write(pki.tokens, token_file(token).encode(), private=True)
    return pki


def _write(path: Path, content: bytes, *, private: bool = False) -> None:
    path.write_bytes(content)
    path.chmod(0o600 if private else 0o644)


def token_file(admin_token: str) -> str:
    """kube-apiserver's `--token-auth-file`: token,user,uid,"group1,group2"."""
    return f'{admin_token},{ADMIN_USER},{ADMIN_USER},"{ADMIN_GROUP}"\n'


def kubeconfig_document(server: str, ca_pem: bytes, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER_NAME,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": ADMIN_USER, "user": {"token": token}}],
        "contexts": [
            {
                "name": CLUSTER_NAME,
                "context": {"cluster": CLUSTER_NAME, "user": ADMIN_USER, "namespace": "default"},
            }
        ],
        "current-context": CLUSTER_NAME,
        "preferences": {},
    }


def etcd_args(data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    return [
        "--name", "vcjob-local",
        "--data-dir", str(data_dir),
        "--listen-client-urls", client,
        "--advertise-client-urls", client,
        "--listen-peer-urls", peer,
        "--initial-advertise-peer-urls", peer,
        "--initial-cluster", f"vcjob-local={peer}",
        "--unsafe-no-fsync",  # a throwaway local cluster: no fsync per write
        "--log-level", "warn",
        "--quota-backend-bytes", str(8 * 1024**3),
    ]  # fmt: skip


@dataclass(frozen=True)
class KubernetesFeatures:
    """Feature gates every control-plane component gets, and the APIs kube-apiserver serves
    beyond its defaults."""

    feature_gates: tuple[str, ...] = ()
    apiserver_gates: tuple[str, ...] = ()
    runtime_config: tuple[str, ...] = ()
    disabled_controllers: tuple[str, ...] = DISABLED_CONTROLLERS

    def controllers_arg(self) -> list[str]:
        return ["--controllers", ",".join(["*", *(f"-{c}" for c in self.disabled_controllers)])]

    def gate_args(self) -> list[str]:
        return _gates_arg(self.feature_gates)

    def apiserver_gate_args(self) -> list[str]:
        return _gates_arg((*self.feature_gates, *self.apiserver_gates))

    def runtime_config_args(self) -> list[str]:
        return ["--runtime-config", ",".join(self.runtime_config)] if self.runtime_config else []


def _gates_arg(gates: tuple[str, ...]) -> list[str]:
    return ["--feature-gates", ",".join(gates)] if gates else []


NO_FEATURES: Final = KubernetesFeatures()
# Kubernetes' own gang scheduling (1.37): the beta gate and the alpha gates of composite pod
# groups, topology-aware placement and the PodGroup preemption policy, so that those paths run
# in every test (docs/native-gang.md).
WORKLOAD_GATES: Final = (
    "GenericWorkload",
    "CompositePodGroup",
    "TopologyAwareWorkloadScheduling",
    "PodGroupPreemptionPolicy",
)
WORKLOAD_APIS: Final = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3")
WORKLOAD_SINCE_MINOR: Final = 37
# From 1.36 kube-apiserver keeps a peer endpoint lease in etcd for proxying between API servers
# of mixed versions (UnknownVersionInteroperabilityProxy, beta, on by default). A lone API server
# has no peer, and removing that lease is one more etcd write a stopping server waits on.
PEER_PROXY_GATE: Final = "UnknownVersionInteroperabilityProxy"
PEER_PROXY_SINCE_MINOR: Final = 36


def kubernetes_features(version: str) -> KubernetesFeatures:
    """What the local cluster turns on for a Kubernetes version (`v1.37.2`): the gang API from
    1.37 on (nothing on older releases, where those gates are alpha or unknown), and which of
    kube-controller-manager's controllers it turns off."""
    minor = int(version.removeprefix("v").split(".")[1])
    apiserver_gates = (f"{PEER_PROXY_GATE}=false",) if minor >= PEER_PROXY_SINCE_MINOR else ()
    if minor < WORKLOAD_SINCE_MINOR:
        # Before 1.37 kube-controller-manager still runs the cloud provider's controllers.
        return KubernetesFeatures(
            apiserver_gates=apiserver_gates,
            disabled_controllers=(*CLOUD_CONTROLLERS, *DISABLED_CONTROLLERS),
        )
    return KubernetesFeatures(
        feature_gates=tuple(f"{gate}=true" for gate in WORKLOAD_GATES),
        apiserver_gates=apiserver_gates,
        runtime_config=tuple(f"{api}=true" for api in WORKLOAD_APIS),
    )


@dataclass(frozen=True)
class ApiServerSettings:
    port: int
    etcd_port: int
    pki: Pki
    audit_log: Path | None = None
    audit_policy: Path | None = None
    features: KubernetesFeatures = NO_FEATURES


def apiserver_args(settings: ApiServerSettings) -> list[str]:
    pki = settings.pki
    args = [
        "--bind-address", "127.0.0.1",
        "--advertise-address", "127.0.0.1",
        "--secure-port", str(settings.port),
        "--etcd-servers", f"http://127.0.0.1:{settings.etcd_port}",
        "--tls-cert-file", str(pki.serving_cert),
        "--tls-private-key-file", str(pki.serving_key),
        "--client-ca-file", str(pki.ca_cert),
        "--token-auth-file", str(pki.tokens),
        "--authorization-mode", "Node,RBAC",
        "--service-account-issuer", SERVICE_ACCOUNT_ISSUER,
        "--service-account-key-file", str(pki.service_account_public_key),
        "--service-account-signing-key-file", str(pki.service_account_key),
        "--service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE,
        "--allow-privileged=true",
        # Nodes are reached at their InternalIP (the node agent's kubelet API); a webhook Service
        # through its endpoints, since no proxy routes Service IPs on this machine.
        "--kubelet-preferred-address-types", "InternalIP",
        "--enable-aggregator-routing=true",
        # The `kubernetes` Service cannot list a loopback address as its endpoint.
        "--endpoint-reconciler-type", "none",
        # On SIGTERM, close idle connections after at most 2 s instead of waiting up to the
        # request timeout (a minute) for the server's own loopback clients to go idle: that wait
        # was most of a cluster's stop. New requests meanwhile get a 429 with Retry-After.
        "--shutdown-send-retry-after=true",
        "--profiling=false",
        "--v", "1",
        *settings.features.apiserver_gate_args(),
        *settings.features.runtime_config_args(),
    ]  # fmt: skip
    if settings.audit_log is not None and settings.audit_policy is not None:
        args += [
            "--audit-log-path", str(settings.audit_log),
            "--audit-policy-file", str(settings.audit_policy),
            "--audit-log-format", "json",
        ]  # fmt: skip
    return args


AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
"""


def controller_manager_args(
    kubeconfig: Path, pki: Pki, features: KubernetesFeatures = NO_FEATURES
) -> list[str]:
    return [
        "--kubeconfig", str(kubeconfig),
        "--authentication-kubeconfig", str(kubeconfig),
        "--authorization-kubeconfig", str(kubeconfig),
        "--bind-address", "127.0.0.1",
        "--secure-port", "0",
        "--leader-elect=false",
        "--use-service-account-credentials=true",
        "--service-account-private-key-file", str(pki.service_account_key),
        "--root-ca-file", str(pki.ca_cert),
        "--cluster-signing-cert-file", str(pki.ca_cert),
        "--cluster-signing-key-file", str(pki.ca_key),
        "--service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE,
        *features.controllers_arg(),
        "--profiling=false",
        "--v", "1",
        *features.gate_args(),
    ]  # fmt: skip


def scheduler_args(kubeconfig: Path, features: KubernetesFeatures = NO_FEATURES) -> list[str]:
    return [
        "--kubeconfig", str(kubeconfig),
        "--authentication-kubeconfig", str(kubeconfig),
        "--authorization-kubeconfig", str(kubeconfig),
        "--bind-address", "127.0.0.1",
        "--secure-port", "0",
        "--leader-elect=false",
        "--profiling=false",
        "--v", "1",
        *features.gate_args(),
    ]  # fmt: skip
