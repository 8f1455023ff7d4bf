"""`vcjob local up`: start the real control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler), bootstrap it, then the webhook, controller and node agent.

Every component runs as its own child process, with its log in `<dir>/logs/<component>.log`.
etcd and kube-apiserver are essential: when one dies, everything stops. The others are restarted
when they exit, the way a Deployment would restart them. SIGINT or SIGTERM stops the children in
reverse order (terminate, wait, kill after a deadline). `<dir>/local.json` records the ports, pids
and paths once everything is ready.
"""

from __future__ import annotations

import base64
import enum
import fcntl
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import click
import httpx
import yaml

from kubeio.signals import install_stop_signals
from localcluster import controlplane, kubebin, kueue, kueuebin
from localcluster.simulator import nodes as simulated_nodes
from localcluster.simulator.client import (
    CRDS,
    MUTATING_WEBHOOKS,
    NAMESPACES,
    NODES,
    QUEUES,
    SECRETS,
    VALIDATING_WEBHOOKS,
    ApiError,
    KubeClient,
)
from localcluster.tools import PROJECT_ROOT, TOOLS_BIN
from shared import certgen, crdgen
from shared.labels import (
    CRONJOB_MUTATE_PATH,
    CRONJOB_MUTATING_WEBHOOK_NAME,
    CRONJOB_VALIDATE_PATH,
    CRONJOB_VALIDATING_WEBHOOK_NAME,
    DEFAULT_QUEUE,
    HYPERNODE_VALIDATE_PATH,
    HYPERNODE_VALIDATING_WEBHOOK_NAME,
    MUTATE_PATH,
    MUTATING_WEBHOOK_NAME,
    POD_VALIDATE_PATH,
    POD_VALIDATING_WEBHOOK_NAME,
    PODGROUP_MUTATE_PATH,
    PODGROUP_MUTATING_WEBHOOK_NAME,
    PODGROUP_VALIDATE_PATH,
    PODGROUP_VALIDATING_WEBHOOK_NAME,
    QUEUE_MUTATE_PATH,
    QUEUE_MUTATING_WEBHOOK_NAME,
    QUEUE_VALIDATE_PATH,
    QUEUE_VALIDATING_WEBHOOK_NAME,
    SCHEDULING_GROUP,
    SCHEDULING_VERSION,
    TOPOLOGY_GROUP,
    TOPOLOGY_VERSION,
    VALIDATE_PATH,
    VALIDATING_WEBHOOK_NAME,
)
from shared.models.flow import (
    FLOW_GROUP,
    JOBFLOW_VALIDATE_PATH,
    JOBFLOW_VALIDATING_WEBHOOK_NAME,
    JOBTEMPLATE_VALIDATE_PATH,
    JOBTEMPLATE_VALIDATING_WEBHOOK_NAME,
)

log = logging.getLogger("localcluster.up")

KUBECONFIG_FILE = "kubeconfig"
STATE_FILE = "local.json"
# Held (flock) for the life of `vcjob local up`: one cluster per folder.
LOCK_FILE = "local.lock"
LOG_DIR = "logs"
PODS_DIR = "pods"  # the node agent's pod directories (volumes, logs)
PKI_DIR = "pki"  # the control plane's certificates, keys and static tokens
ETCD_DIR = "etcd"  # etcd's data, unless --data-dir names a folder to keep it in
# Clients of the product's own processes: through the fault proxy when there is one.
COMPONENTS_KUBECONFIG_FILE = "components.kubeconfig"
ESSENTIAL = ("etcd", "kube-apiserver")
WEBHOOK_DIR = "webhook"
DEFAULT_CRDS_DIR = PROJECT_ROOT / "charts" / "vcjob" / "files" / "crds"
BARE_NAMESPACES = ("default", "kube-system")
NAMESPACES_TO_CREATE = (*BARE_NAMESPACES, "vcjob-system")
MUTATING_CONFIG_NAME = "vcjob-mutate"
VALIDATING_CONFIG_NAME = "vcjob-validate"
WEBHOOK_HOSTS = ("127.0.0.1", "localhost", "vcjob-webhook.vcjob-system.svc")
STARTUP_TIMEOUT = 40.0
STOP_DEADLINE = 8.0
# libyaml's safe loader where PyYAML was built with it: the chart's CRDs (1.8 MB of YAML) load in
# about a third of the pure-Python loader's time, at every cluster start.
YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
RESTART_DELAY = 2.0
MISSING_COMMAND_MARKERS = ("No such command", "ModuleNotFoundError", "ImportError")
PORT_TAKEN_MARKERS = ("Address already in use", "address already in use", "Errno 98")
PORT_ATTEMPTS = 3

# Run before a child's program (Linux): ask the kernel to send SIGTERM when `up` dies, even by
# SIGKILL, so no component outlives it; then exec the real program. The flag survives execve.
PARENT_DEATH_SHIM = """
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
if os.getppid() != int(sys.argv[1]):
    sys.exit(0)
os.execv(sys.argv[2], sys.argv[2:])
"""


def with_parent_death_signal(argv: Sequence[str]) -> list[str]:
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-c", PARENT_DEATH_SHIM, str(os.getpid()), *argv]


class Readiness(enum.Enum):
    READY = "ready"
    MISSING = "missing"
    PORT_TAKEN = "port taken"


class StartupError(click.ClickException):
    """Something the cluster needs did not come up; the message says what and where to look."""


@dataclass(frozen=True)
class UpOptions:
    dir: Path
    port: int = 6443
    simulator: bool = True
    controller: bool = True
    # Kueue's CRDs and manager, started before the controller (localcluster.kueue).
    kueue: bool = False
    webhook: bool = True
    nodes: int = 3
    node_shape: simulated_nodes.NodeShape = field(default_factory=simulated_nodes.NodeShape)
    pod_runtime: str = "5s"
    fault_rate: float = 0.0
    fault_seed: int | None = None
    data_dir: Path | None = None
    elastic_period: str = "30s"
    log_format: str = "json"
    crds_dir: Path = DEFAULT_CRDS_DIR
    # A fresh cluster for `helm install`: no CRDs, vcjob-system, Queue, webhook or controller.
    bare: bool = False
    audit_log: Path | None = None
    # REPOSITORY=COMMAND: pods of that image run as real processes (see simulator/images.py).
    run_images: tuple[str, ...] = ()

    @property
    def kubeconfig(self) -> Path:
        return self.dir / KUBECONFIG_FILE

    @property
    def logs(self) -> Path:
        return self.dir / LOG_DIR


# -- pure builders ---------------------------------------------------------------------------


def default_queue() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": DEFAULT_QUEUE},
        "spec": {"weight": 1, "reclaimable": True},
    }


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def webhook_configurations(port: int, ca_pem: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration the chart installs, aimed at 127.0.0.1."""
    ca_bundle = base64.b64encode(ca_pem).decode()
    labels = {"app.kubernetes.io/name": "vcjob", "app.kubernetes.io/component": "webhook"}

    def hook(
        name: str,
        path: str,
        operations: list[str],
        resource: str = "jobs",
        group: str = "batch.volcano.sh",
        version: str = "v1alpha1",
        scope: str = "Namespaced",
        failure_policy: str = "Fail",
    ) -> dict[str, Any]:
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": failure_policy,
            "matchPolicy": "Equivalent",
            "timeoutSeconds": 5,
            "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle},
            "rules": [
                {
                    "apiGroups": [group],
                    "apiVersions": [version],
                    "operations": operations,
                    "resources": [resource],
                    "scope": scope,
                }
            ],
            "namespaceSelector": {},
            "objectSelector": {},
        }

    scheduling = {"group": SCHEDULING_GROUP, "version": SCHEDULING_VERSION}
    topology = {"group": TOPOLOGY_GROUP, "version": TOPOLOGY_VERSION, "scope": "Cluster"}
    queues = {**scheduling, "resource": "queues", "scope": "Cluster"}
    podgroups = {**scheduling, "resource": "podgroups"}
    extra_mutating = [
        hook(QUEUE_MUTATING_WEBHOOK_NAME, QUEUE_MUTATE_PATH, ["CREATE"], **queues),
        hook(PODGROUP_MUTATING_WEBHOOK_NAME, PODGROUP_MUTATE_PATH, ["CREATE"], **podgroups),
    ]
    extra_validating = [
        hook(
            QUEUE_VALIDATING_WEBHOOK_NAME,
            QUEUE_VALIDATE_PATH,
            ["CREATE", "UPDATE", "DELETE"],
            **queues,
        ),
        hook(PODGROUP_VALIDATING_WEBHOOK_NAME, PODGROUP_VALIDATE_PATH, ["CREATE"], **podgroups),
        # Every pod of the cluster passes here: a webhook that is down must not stop them.
        hook(
            POD_VALIDATING_WEBHOOK_NAME,
            POD_VALIDATE_PATH,
            ["CREATE"],
            resource="pods",
            group="",
            version="v1",
            failure_policy="Ignore",
        ),
        hook(
            HYPERNODE_VALIDATING_WEBHOOK_NAME,
            HYPERNODE_VALIDATE_PATH,
            ["CREATE", "UPDATE"],
            resource="hypernodes",
            **topology,
        ),
        hook(
            JOBFLOW_VALIDATING_WEBHOOK_NAME,
            JOBFLOW_VALIDATE_PATH,
            ["CREATE", "UPDATE"],
            resource="jobflows",
            group=FLOW_GROUP,
        ),
        hook(
            JOBTEMPLATE_VALIDATING_WEBHOOK_NAME,
            JOBTEMPLATE_VALIDATE_PATH,
            ["CREATE", "UPDATE"],
            resource="jobtemplates",
            group=FLOW_GROUP,
        ),
    ]

    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING_CONFIG_NAME, "labels": labels},
        "webhooks": [
            {**hook(MUTATING_WEBHOOK_NAME, MUTATE_PATH, ["CREATE"]), "reinvocationPolicy": "Never"},
            {
                **hook(CRONJOB_MUTATING_WEBHOOK_NAME, CRONJOB_MUTATE_PATH, ["CREATE"], "cronjobs"),
                "reinvocationPolicy": "Never",
            },
            *({**h, "reinvocationPolicy": "Never"} for h in extra_mutating),
        ],
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_CONFIG_NAME, "labels": labels},
        "webhooks": [
            hook(VALIDATING_WEBHOOK_NAME, VALIDATE_PATH, ["CREATE", "UPDATE"]),
            hook(
                CRONJOB_VALIDATING_WEBHOOK_NAME,
                CRONJOB_VALIDATE_PATH,
                ["CREATE", "UPDATE"],
                "cronjobs",
            ),
            *extra_validating,
        ],
    }
    return mutating, validating


def lock_dir(directory: Path) -> IO[str]:
    """Take the folder's lock for as long as the returned file stays open.

    A second `vcjob local up` on the same folder would overwrite the kubeconfig and certificates
    of the first (then every request fails certificate checks); it stops here instead, before
    touching anything. The kernel drops the lock when the process ends, however it ends.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise StartupError(
            f"a local cluster is already running from {directory} (pid {holder}); "
            "stop it first or choose another --dir"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def check_port_free(port: int) -> None:
    """Fail before starting anything when the API server's port is taken."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as err:
            raise StartupError(
                f"port {port} on 127.0.0.1 is in use ({err.strerror}); "
                "pass --port 0 for any free port, or stop what listens there"
            ) from None


def load_crds(folder: Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in the folder's YAML files, in file-name order."""
    crds = []
    for path in sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml")):
        with path.open() as stream:
            for document in yaml.load_all(stream, Loader=YAML_LOADER):
                if not document:
                    continue
                if document.get("kind") != "CustomResourceDefinition":
                    raise StartupError(
                        f"{path}: expected a CustomResourceDefinition, not {document.get('kind')!r}"
                    )
                crds.append(document)
    return crds


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def vcjob_command() -> list[str]:
    """How to run `vcjob` with this interpreter: the console script next to it when installed."""
    script = Path(sys.executable).with_name("vcjob")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from shared.cli import main; sys.exit(main())"]


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# -- child processes -------------------------------------------------------------------------


@dataclass
class Child:
    """A supervised child process whose output goes to its own log file."""

    name: str
    argv: Sequence[str]
    log_path: Path
    restart: bool
    port: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    _log: IO[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._log is None:
            self._log = self.log_path.open("ab")
        # A session of its own: a terminal's Ctrl-C reaches `up` only, which stops them in order.
        self.process = subprocess.Popen(
            with_parent_death_signal(self.argv),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.info("component started", extra={"component": self.name, "pid": self.process.pid})

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def wait(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            log.warning(
                "component did not stop in time, killing it", extra={"component": self.name}
            )
            self.process.kill()
            self.process.wait(5)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def missing_command(self) -> bool:
        """Whether it exited because this vcjob build does not have the command yet."""
        tail = log_tail(self.log_path, 15)
        return any(marker in tail for marker in MISSING_COMMAND_MARKERS)

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"pid": self.pid, "log": str(self.log_path), **self.extra}
        if self.port is not None:
            described["port"] = self.port
        return described


# -- the cluster -----------------------------------------------------------------------------


class LocalControlPlane:
    def __init__(self, options: UpOptions, echo: Callable[[str], None] = click.echo) -> None:
        self.options = options
        self._echo = echo
        self.stop = threading.Event()
        self.children: dict[str, Child] = {}
        self._components_kubeconfig = options.kubeconfig
        # The node agent's kubelet API, which every Node advertises.
        self.kubelet_port = free_port()
        self._client: KubeClient | None = None
        self._state_written = False
        self.api_port = options.port
        self._lock: IO[str] | None = None

    # lifecycle

    def run(self) -> int:
        """Start everything, wait for a stop signal, stop everything. Returns the exit code."""
        self._install_signal_handlers()
        try:
            self.start()
            if self.stop.is_set():
                return 0
            self._banner()
            return self._supervise()
        finally:
            self.shutdown()

    def start(self) -> None:
        options = self.options
        self._lock = lock_dir(options.dir)
        running = read_state(options.dir)
        if running and running.get("ready") and process_alive(int(running.get("pid") or 0)):
            raise StartupError(
                f"a local cluster is already running from {options.dir} (pid {running['pid']}); "
                "stop it first or choose another --dir"
            )
        check_port_free(options.port)
        for stale in (options.kubeconfig, options.dir / STATE_FILE):
            stale.unlink(missing_ok=True)
        self._start_control_plane()
        client = self._client = KubeClient(options.kubeconfig)
        self._echo(
            f"API server ready at {client.server}; kubeconfig: {options.kubeconfig.resolve()}"
        )
        if not options.bare:
            self._apply_crds(client)
        self._create_namespaces(client, bare=options.bare)
        if not options.bare:
            self._create_default_queue(client)
        if options.simulator:
            # Nodes exist where a kubelet runs them: without the node agent there are none,
            # so no pod is bound to a node that nothing would ever run or clean up.
            self._register_nodes(client)
        self._wait_for_service_account(client)
        if options.webhook and not options.bare:
            self._start_webhook(client)
        elif not options.bare:
            self._remove_webhook_configurations(client)
        if options.kueue:
            self._start_kueue(client)
        if options.controller and not options.bare:
            self._start_controller()
        if options.simulator:
            self._start_simulator()
        self._write_state(ready=True)

    def shutdown(self) -> None:
        self.stop.set()
        clients = [c for name, c in self.children.items() if name not in ESSENTIAL]
        deadline = time.monotonic() + STOP_DEADLINE
        for child in reversed(clients):
            child.terminate()
        # The webhook is waited for after the API server: it finishes once the API server's
        # idle keep-alive TLS connections to it are gone.
        for child in reversed(clients):
            if child.name != "webhook":
                child.wait(deadline)
        if self._client is not None:
            self._client.close()
        for name in reversed(ESSENTIAL):
            essential = self.children.get(name)
            if essential is not None:
                essential.terminate()
                essential.wait(time.monotonic() + STOP_DEADLINE)
        webhook = self.children.get("webhook")
        if webhook is not None:
            webhook.wait(time.monotonic() + STOP_DEADLINE)
        for child in self.children.values():
            child.close()
        if self._state_written:
            self._write_state(ready=False)
        if self.children:
            log.info("local cluster stopped")
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _install_signal_handlers(self) -> None:
        """SIGINT/SIGTERM stop the cluster; the handler takes no lock (kubeio.signals)."""
        install_stop_signals(self.stop)

    def _supervise(self) -> int:
        pending_restarts: dict[str, float] = {}
        while not self.stop.wait(0.5):
            for name, child in list(self.children.items()):
                code = child.exited()
                if code is None:
                    continue
                if not child.restart:
                    log.error(
                        "essential component exited, stopping the cluster",
                        extra={"component": name, "exit_code": code, "log": str(child.log_path)},
                    )
                    self._echo(f"{name} exited with code {code}:\n{log_tail(child.log_path)}")
                    return 1
                due = pending_restarts.setdefault(name, time.monotonic() + RESTART_DELAY)
                if time.monotonic() >= due:
                    del pending_restarts[name]
                    log.warning(
                        "component exited, restarting it",
                        extra={"component": name, "exit_code": code, "log": str(child.log_path)},
                    )
                    child.restarts += 1
                    child.start()
                    self._write_state(ready=True)
        return 0

    # components

    def _start_control_plane(self) -> None:
        options = self.options
        binaries = {
            name: kubebin.require(name)
            for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
        }
        pki = controlplane.write_pki(options.dir / PKI_DIR)
        token = pki.admin_token.read_text().strip()
        data_dir = options.data_dir or options.dir / ETCD_DIR
        if options.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)  # a fresh cluster each time
        etcd_port, peer_port = free_port(), free_port()
        self._spawn(
            "etcd",
            [str(binaries["etcd"]), *controlplane.etcd_args(data_dir, etcd_port, peer_port)],
            restart=False,
            port=etcd_port,
        )
        self._wait_http("etcd", f"http://127.0.0.1:{etcd_port}/health", None, None)
        if options.port == 0:
            self.api_port = free_port()
        audit_policy = None
        if options.audit_log is not None:
            audit_policy = options.dir / PKI_DIR / "audit-policy.yaml"
            audit_policy.write_text(controlplane.AUDIT_POLICY)
        settings = controlplane.ApiServerSettings(
            port=self.api_port,
            etcd_port=etcd_port,
            pki=pki,
            audit_log=options.audit_log,
            audit_policy=audit_policy,
        )
        self._spawn(
            "kube-apiserver",
            [str(binaries["kube-apiserver"]), *controlplane.apiserver_args(settings)],
            restart=False,
            port=self.api_port,
        )
        server = f"https://127.0.0.1:{self.api_port}"
        self._wait_http("kube-apiserver", f"{server}/readyz", pki.ca_cert, token)
        document = controlplane.kubeconfig_document(server, pki.ca_cert.read_bytes(), token)
        scratch = options.kubeconfig.with_suffix(".tmp")
        scratch.write_text(yaml.safe_dump(document))
        scratch.chmod(0o600)
        scratch.replace(options.kubeconfig)
        self._components_kubeconfig = options.kubeconfig
        kubeconfig = options.kubeconfig
        self._spawn(
            "kube-controller-manager",
            [str(binaries["kube-controller-manager"]),
             *controlplane.controller_manager_args(kubeconfig, pki)],
            restart=True,
        )  # fmt: skip
        self._spawn(
            "kube-scheduler",
            [str(binaries["kube-scheduler"]), *controlplane.scheduler_args(kubeconfig)],
            restart=True,
        )
        if options.fault_rate:
            self._start_fault_proxy(pki, server, token)

    def _start_fault_proxy(self, pki: controlplane.Pki, server: str, token: str) -> None:
        """The product's processes reach kube-apiserver through a proxy that injects faults."""
        options = self.options
        port = free_port()
        argv = [
            sys.executable, "-m", "localcluster.faultproxy",
            "--upstream", server,
            "--upstream-ca", str(pki.ca_cert),
            "--cert", str(pki.serving_cert),
            "--key", str(pki.serving_key),
            "--port", str(port),
            "--fault-rate", str(options.fault_rate),
        ]  # fmt: skip
        if options.fault_seed is not None:
            argv += ["--fault-seed", str(options.fault_seed)]
        self._spawn("fault-proxy", argv, restart=True, port=port)
        proxied = f"https://127.0.0.1:{port}"
        self._wait_http("fault-proxy", f"{proxied}/readyz", pki.ca_cert, token, faulty=True)
        document = controlplane.kubeconfig_document(proxied, pki.ca_cert.read_bytes(), token)
        path = options.dir / COMPONENTS_KUBECONFIG_FILE
        path.write_text(yaml.safe_dump(document))
        path.chmod(0o600)
        self._components_kubeconfig = path

    def _wait_http(
        self,
        name: str,
        url: str,
        ca: Path | None,
        token: str | None,
        *,
        faulty: bool = False,
    ) -> None:
        """Wait until `url` answers 200 (any answer at all through the fault proxy)."""
        child = self.children[name]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        deadline = time.monotonic() + STARTUP_TIMEOUT
        with httpx.Client(verify=str(ca) if ca else True, timeout=2.0, headers=headers) as http:
            while True:
                self._check_alive(child)
                try:
                    answer = http.get(url)
                    if answer.status_code == 200 or faulty:
                        return
                    reason = f"{answer.status_code} {answer.text[:200]}"
                except httpx.HTTPError as err:
                    reason = str(err) or type(err).__name__
                if time.monotonic() > deadline:
                    raise StartupError(
                        f"{name} was not ready within {STARTUP_TIMEOUT:.0f}s ({reason}); "
                        f"see {child.log_path}"
                    )
                self.stop.wait(0.1)

    def _wait_for_service_account(self, client: KubeClient) -> None:
        """Pods are refused until kube-controller-manager made the namespace's ServiceAccount."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            try:
                client.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
                return
            except ApiError as err:
                if err.code != 404 or time.monotonic() > deadline:
                    raise StartupError(
                        "kube-controller-manager made no ServiceAccount `default` within "
                        f"{STARTUP_TIMEOUT:.0f}s: {err}; see "
                        f"{self.children['kube-controller-manager'].log_path}"
                    ) from err
            self.stop.wait(0.1)

    def _apply_crds(self, client: KubeClient) -> None:
        crds = self._crds()
        for crd in crds:
            client.apply(CRDS, crd)
            log.info("crd applied", extra={"crd": crd["metadata"]["name"]})
        if crds:
            self._wait_for_discovery(client, crds)

    def _crds(self) -> list[dict[str, Any]]:
        """The CRDs to apply: from --crds-dir; without a chart on disk (an installed wheel),
        generated by vcjob's schema package, the same ones the chart ships."""
        folder = self.options.crds_dir
        if folder == DEFAULT_CRDS_DIR and not folder.is_dir():
            fallback = PROJECT_ROOT / "charts" / "vcjob" / "templates" / "crds"
            if not fallback.is_dir():
                self._echo("CRDs: generated by vcjob's schema package (no chart on disk)")
                return crdgen.build_crds()
            folder = fallback
        if not folder.is_dir():
            raise StartupError(
                f"--crds-dir {folder} is not a folder; pass a folder of CRD YAML files "
                "or leave the option out"
            )
        crds = load_crds(folder)
        if not crds:
            log.warning("no CRDs in the CRD folder", extra={"folder": str(folder)})
            self._echo(
                f"warning: {folder} holds no CustomResourceDefinition YAML files; none applied, "
                "so Jobs and Queues are not served (leave --crds-dir out to get vcjob's CRDs)"
            )
        return crds

    def _wait_for_discovery(self, client: KubeClient, crds: Sequence[dict[str, Any]]) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        for crd in crds:
            spec = crd["spec"]
            plural = spec["names"]["plural"]
            for version in (v["name"] for v in spec["versions"] if v.get("served", True)):
                path = f"/apis/{spec['group']}/{version}"
                while True:
                    try:
                        listing = client.request("GET", path)
                        if any(r.get("name") == plural for r in listing.get("resources") or []):
                            break
                    except ApiError as err:
                        if err.code != 404:
                            raise
                    if time.monotonic() > deadline:
                        raise StartupError(
                            f"{plural}.{spec['group']}/{version} is not served "
                            f"after {STARTUP_TIMEOUT:.0f}s"
                        )
                    self.stop.wait(0.1)

    def _create_namespaces(self, client: KubeClient, *, bare: bool) -> None:
        # A bare cluster has only the namespaces every cluster has; helm creates vcjob-system.
        for name in BARE_NAMESPACES if bare else NAMESPACES_TO_CREATE:
            try:
                client.create(NAMESPACES, namespace(name))
            except ApiError as err:
                if not err.already_exists:
                    raise

    def _create_default_queue(self, client: KubeClient) -> None:
        try:
            client.request("GET", "/apis/scheduling.volcano.sh/v1beta1")
        except ApiError:
            log.warning("queues are not served, no default Queue created")
            return
        try:
            client.create(QUEUES, default_queue())
        except ApiError as err:
            if not err.already_exists:
                raise
        client.patch(QUEUES, DEFAULT_QUEUE, {"status": {"state": "Open"}}, subresource="status")

    def _register_nodes(self, client: KubeClient) -> None:
        options = self.options
        now = datetime.now(UTC)
        nodes = simulated_nodes.build_nodes(
            options.nodes, options.node_shape, now, kubelet_port=self.kubelet_port
        )
        for node in nodes:
            client.apply(NODES, node)
            client.patch(
                NODES, node["metadata"]["name"], {"status": node["status"]}, subresource="status"
            )
        log.info("nodes registered", extra={"count": options.nodes})

    def _start_webhook(self, client: KubeClient) -> None:
        options = self.options
        cert_dir = options.dir / WEBHOOK_DIR
        bundle = certgen.issue(list(WEBHOOK_HOSTS))
        certgen.write_bundle(bundle, cert_dir)
        for _ in range(PORT_ATTEMPTS):
            port, health_port, metrics_port = free_port(), free_port(), free_port()
            argv = [
                *vcjob_command(),
                "webhook",
                "--host", "127.0.0.1",
                "--port", str(port),
                "--tls-cert-file", str(cert_dir / certgen.CERT_FILE),
                "--tls-private-key-file", str(cert_dir / certgen.KEY_FILE),
                "--scheduler-name", "volcano",
                "--queue-check", "on",
                "--kubeconfig", str(self._components_kubeconfig),
                "--health-port", str(health_port),
                "--metrics-port", str(metrics_port),
                "--log-format", options.log_format,
                # Nothing balances load here: there is no point in serving on after SIGTERM.
                "--shutdown-delay", "0.5",
            ]  # fmt: skip
            child = self._spawn(
                "webhook",
                argv,
                restart=True,
                port=port,
                extra={
                    "health_port": health_port,
                    "metrics_port": metrics_port,
                    "certs": str(cert_dir),
                },
            )
            readiness = self._wait_ready(child, f"http://127.0.0.1:{health_port}/readyz")
            if readiness is Readiness.MISSING:
                return
            if readiness is Readiness.READY:
                mutating, validating = webhook_configurations(port, bundle.ca.cert_pem)
                client.apply(MUTATING_WEBHOOKS, mutating)
                client.apply(VALIDATING_WEBHOOKS, validating)
                log.info("webhook registered", extra={"port": port})
                return
        raise StartupError(f"the webhook found no free port in {PORT_ATTEMPTS} attempts")

    def _remove_webhook_configurations(self, client: KubeClient) -> None:
        """A previous run's configurations would send admission to a webhook that is not there."""
        for resource, name in (
            (MUTATING_WEBHOOKS, MUTATING_CONFIG_NAME),
            (VALIDATING_WEBHOOKS, VALIDATING_CONFIG_NAME),
        ):
            try:
                client.delete(resource, name)
            except ApiError as err:
                if not err.not_found:
                    raise

    def _start_controller(self) -> None:
        options = self.options
        for _ in range(PORT_ATTEMPTS):
            health_port, metrics_port = free_port(), free_port()
            argv = [
                *vcjob_command(),
                "controller",
                "--kubeconfig", str(self._components_kubeconfig),
                "--bind-address", "127.0.0.1",
                "--health-port", str(health_port),
                "--metrics-port", str(metrics_port),
                "--no-leader-elect",
                "--elastic-period", options.elastic_period,
                "--log-format", options.log_format,
            ]  # fmt: skip
            child = self._spawn(
                "controller",
                argv,
                restart=True,
                extra={"health_port": health_port, "metrics_port": metrics_port},
            )
            readiness = self._wait_ready(child, f"http://127.0.0.1:{health_port}/readyz")
            if readiness is not Readiness.PORT_TAKEN:
                return
        raise StartupError(f"the controller found no free port in {PORT_ATTEMPTS} attempts")

    def _start_kueue(self, client: KubeClient) -> None:
        for resource, obj in (
            (NAMESPACES, namespace(kueue.NAMESPACE)),
            (SECRETS, kueue.webhook_secret()),
        ):
            try:
                client.create(resource, obj, obj["metadata"].get("namespace"))
            except ApiError as err:
                if not err.already_exists:
                    raise
        binary = kueuebin.require()
        folder = self.options.dir / "kueue"
        for _ in range(PORT_ATTEMPTS):
            health_port, webhook_port = free_port(), free_port()
            crds = kueue.crds(webhook_port)
            for crd in crds:
                client.apply(CRDS, crd)
            self._wait_for_discovery(client, crds)
            config = kueue.prepare(folder, health_port=health_port, webhook_port=webhook_port)
            argv = kueue.manager_argv(binary, self._components_kubeconfig, config)
            child = self._spawn("kueue", argv, restart=True, extra={"health_port": health_port})
            self._mount_kueue_certificate(client, child, kueue.cert_dir_of(folder))
            if self._wait_ready(child, f"http://127.0.0.1:{health_port}/readyz") is not (
                Readiness.PORT_TAKEN
            ):
                return
        raise StartupError(f"Kueue found no free port in {PORT_ATTEMPTS} attempts")

    def _mount_kueue_certificate(self, client: KubeClient, child: Child, cert_dir: Path) -> None:
        """Kueue issues its webhook certificate into a Secret and waits for the file (a Secret
        volume in a real cluster): copy it over once it is there."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not kueue.mount_certificate(
            client.get(SECRETS, kueue.WEBHOOK_SECRET, kueue.NAMESPACE), cert_dir
        ):
            if child.exited() is not None or time.monotonic() > deadline:
                return  # _wait_ready reports it, with Kueue's log
            if self.stop.wait(0.2):
                raise StartupError("interrupted while starting")

    def _start_simulator(self) -> None:
        options = self.options
        argv = [
            sys.executable,
            "-m",
            "localcluster.simulator",
            "--kubeconfig", str(options.kubeconfig),
            "--pod-runtime", options.pod_runtime,
            "--log-format", options.log_format,
            "--pods-dir", str(options.dir / PODS_DIR),
            "--kubelet-port", str(self.kubelet_port),
        ]  # fmt: skip
        for mapping in options.run_images:
            argv += ["--run-image", mapping]
        self._spawn("simulator", argv, restart=True)

    # helpers

    def _spawn(
        self,
        name: str,
        argv: Sequence[str],
        *,
        restart: bool,
        port: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Child:
        child = Child(
            name=name,
            argv=argv,
            log_path=self.options.logs / f"{name}.log",
            restart=restart,
            port=port,
            extra=extra or {},
        )
        child.log_path.parent.mkdir(parents=True, exist_ok=True)
        child.log_path.write_bytes(b"")
        child.start()
        self.children[name] = child
        return child

    def _check_alive(self, child: Child) -> None:
        code = child.exited()
        if code is not None:
            raise StartupError(
                f"{child.name} exited with code {code} while starting:\n{log_tail(child.log_path)}"
            )
        if self.stop.is_set():
            raise StartupError("interrupted while starting")

    def _wait_ready(self, child: Child, url: str) -> Readiness:
        """Wait for the child's readiness endpoint. MISSING (with a warning) when the installed
        vcjob lacks the command, PORT_TAKEN when another process took one of its ports first."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        with httpx.Client(timeout=2.0) as http:
            while True:
                code = child.exited()
                if code is not None:
                    self.children.pop(child.name)
                    child.close()
                    tail = log_tail(child.log_path, 15)
                    if any(marker in tail for marker in PORT_TAKEN_MARKERS):
                        log.warning("port taken, retrying", extra={"component": child.name})
                        return Readiness.PORT_TAKEN
                    if child.missing_command():
                        log.warning(
                            "component not available in this build",
                            extra={"component": child.name},
                        )
                        self._echo(
                            f"warning: `vcjob {child.name}` is not available; going on without it"
                        )
                        return Readiness.MISSING
                    raise StartupError(
                        f"{child.name} exited with code {code} while starting:\n"
                        + log_tail(child.log_path)
                    )
                try:
                    if http.get(url).status_code == 200:
                        return Readiness.READY
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise StartupError(
                        f"{child.name} was not ready within {STARTUP_TIMEOUT:.0f}s; "
                        f"see {child.log_path}"
                    )
                if self.stop.wait(0.2):
                    raise StartupError("interrupted while starting")

    def _write_state(self, *, ready: bool) -> None:
        options = self.options
        state = {
            "pid": os.getpid(),
            "ready": ready,
            "dir": str(options.dir.resolve()),
            "kubeconfig": str(options.kubeconfig.resolve()),
            "server": f"https://127.0.0.1:{self.api_port}",
            "port": self.api_port,
            "logs": str(options.logs.resolve()),
            "components": {name: child.describe() for name, child in self.children.items()},
        }
        target = options.dir / STATE_FILE
        scratch = target.with_suffix(".tmp")
        scratch.write_text(json.dumps(state, indent=2) + "\n")
        scratch.replace(target)
        self._state_written = True

    def _banner(self) -> None:
        options = self.options
        kubeconfig = options.kubeconfig.resolve()
        shape = options.node_shape
        lines = [
            "",
            "vcjob local cluster is up",
            f"  API server  https://127.0.0.1:{self.api_port}",
        ]
        webhook = self.children.get("webhook")
        lines.append(
            f"  webhook     https://127.0.0.1:{webhook.port}" if webhook else "  webhook     off"
        )
        lines.append("  controller  " + ("running" if "controller" in self.children else "off"))
        if "simulator" in self.children:
            gpus = f", {shape.gpu} nvidia.com/gpu" if shape.gpu else ""
            lines.append(
                f"  simulator   {options.nodes} nodes ({shape.cpu} cpu, {shape.memory}{gpus}); "
                f"pods run {options.pod_runtime}"
            )
        else:
            lines.append("  simulator   off")
        lines += [
            f"  logs        {options.logs.resolve()}",
            f"  kubeconfig  {kubeconfig}",
            "",
            *path_export_lines(),
            f"  export KUBECONFIG={kubeconfig}",
            *(
                [
                    "  # bare: no CRDs, webhook or controller; install the chart:",
                    "  helm install vcjob charts/vcjob -n vcjob-system --create-namespace",
                ]
                if options.bare
                else [
                    "  kubectl get nodes,queues",
                    "  kubectl create -f examples/demo-job.yaml",
                    "  kubectl get vcjob,pods -w",
                ]
            ),
            "",
            "Press Ctrl-C to stop.",
        ]
        self._echo("\n".join(lines))


def path_export_lines() -> list[str]:
    """The PATH line to print unless PATH already finds the pinned kubectl and helm (`make
    cluster`, `make tools`) and this installation's `vcjob` and `kubectl-vcjob` (what `kubectl
    vcjob` runs): one line that puts both folders first."""
    wanted: dict[str, Path] = {}
    if (TOOLS_BIN / "kubectl").exists():
        wanted["kubectl"] = TOOLS_BIN / "kubectl"
    scripts = Path(sysconfig.get_path("scripts"))
    for command in ("vcjob", "kubectl-vcjob"):
        if (scripts / command).exists():
            wanted[command] = scripts / command
    if all(
        (found := shutil.which(command)) is not None and Path(found).resolve() == path.resolve()
        for command, path in wanted.items()
    ):
        return []
    folders = list(dict.fromkeys(str(path.parent) for path in wanted.values()))
    return [f"  export PATH={':'.join(folders)}:$PATH   # kubectl, helm, vcjob, kubectl vcjob"]


def _port_of(kubeconfig: Path, fallback: int) -> int:
    try:
        config = yaml.safe_load(kubeconfig.read_text())
        server = config["clusters"][0]["cluster"]["server"]
        port = urlsplit(server).port
    except (OSError, KeyError, IndexError, TypeError, ValueError, yaml.YAMLError):
        return fallback
    return port or fallback


def process_alive(pid: int) -> bool:
    """Whether a process with this pid (not ours) still runs."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_state(directory: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((directory / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None
