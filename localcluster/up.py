"""`vcjob local up`: start the real control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler), bootstrap it, then the webhook, controller and node agent.

Every component runs as its own child process, with its log in `<dir>/logs/<component>.log`.
Every component is restarted when it exits: etcd (on its data, which only a new `up` wipes) and
kube-apiserver as a kubelet restarts its static pods, the others as a Deployment would. SIGINT or
SIGTERM stops the children in reverse order (terminate, wait, kill after a deadline).
`<dir>/local.json` records the ports, pids and paths once everything is ready.

This module is the orchestration (about 600 lines, one method per start step, in the order they
run): the start steps, the supervision loop and the stop. What the steps use lives apart: the
folder, its lock and `local.json` (`clusterdir`), child processes (`children`), waiting for
readiness (`readiness`), the objects written into the cluster (`bootstrap`), the control plane's
flags and certificates (`controlplane`), Kueue (`kueue`) and the banner (`banner`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import click
import yaml

from kubeio.signals import install_stop_signals
from localcluster import (
    banner,
    controlplane,
    kubebin,
    kueue,
    kueuebin,
    multikueue,
    readiness,
)
from localcluster.bootstrap import (
    BARE_NAMESPACES,
    DEFAULT_CRDS_DIR,
    MUTATING_CONFIG_NAME,
    NAMESPACES_TO_CREATE,
    VALIDATING_CONFIG_NAME,
    WEBHOOK_HOSTS,
    default_queue,
    load_crds,
    namespace,
    webhook_configurations,
)
from localcluster.children import (
    Child,
    Readiness,
    free_port,
    process_alive,
    vcjob_command,
)
from localcluster.clusterdir import (
    COMPONENTS_KUBECONFIG_FILE,
    ETCD_DIR,
    PKI_DIR,
    PODS_DIR,
    STATE_FILE,
    WEBHOOK_DIR,
    StartupError,
    check_port_free,
    lock_dir,
    read_state,
)
from localcluster.options import UpOptions
from localcluster.readiness import STARTUP_TIMEOUT
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
    Resource,
)
from localcluster.tools import PROJECT_ROOT
from shared import certgen, crdgen
from shared.featuregates import SCHEDULING_GATES_QUEUE_ADMISSION, parse_feature_gates
from shared.labels import DEFAULT_QUEUE

log = logging.getLogger("localcluster.up")

ESSENTIAL = ("etcd", "kube-apiserver")
STOP_DEADLINE = 8.0
RESTART_DELAY = 2.0
PORT_ATTEMPTS = 3


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
        for worker in options.multikueue_workers:
            if not worker.kubeconfig.is_file():
                raise StartupError(
                    f"MultiKueue worker {worker.name}: no kubeconfig at {worker.kubeconfig}; "
                    f"start it first: vcjob local up --dir {worker.dir} --kueue --port 0"
                )
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
        readiness.wait_for_service_account(
            client, self.stop, self.children["kube-controller-manager"].log_path
        )
        if options.webhook and not options.bare:
            self._start_webhook(client)
        elif not options.bare:
            self._remove_webhook_configurations(client)
        if options.kueue:
            self._start_kueue(client)
        if options.multikueue_workers:
            self._configure_multikueue(client)
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
            port=etcd_port,
        )
        readiness.wait_http(
            self.children["etcd"], f"http://127.0.0.1:{etcd_port}/health", None, None, self.stop
        )
        if options.port == 0:
            self.api_port = free_port()
        audit_policy = None
        if options.audit_log is not None:
            audit_policy = options.dir / PKI_DIR / "audit-policy.yaml"
            audit_policy.write_text(controlplane.AUDIT_POLICY)
        features = controlplane.kubernetes_features(kubebin.KUBERNETES_VERSION)
        settings = controlplane.ApiServerSettings(
            port=self.api_port,
            etcd_port=etcd_port,
            pki=pki,
            audit_log=options.audit_log,
            audit_policy=audit_policy,
            features=features,
        )
        # Killed outright if `up` dies: its graceful stop drains in-flight requests against an
        # etcd that gets its own signal at the same instant, for up to the request timeout (60 s).
        # `up`'s own stop has no such race: it stops kube-apiserver before etcd.
        self._spawn(
            "kube-apiserver",
            [str(binaries["kube-apiserver"]), *controlplane.apiserver_args(settings)],
            port=self.api_port,
            death_signal=signal.SIGKILL,
        )
        server = f"https://127.0.0.1:{self.api_port}"
        readiness.wait_http(
            self.children["kube-apiserver"], f"{server}/readyz", pki.ca_cert, token, self.stop
        )
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
             *controlplane.controller_manager_args(kubeconfig, pki, features)],
        )  # fmt: skip
        self._spawn(
            "kube-scheduler",
            [str(binaries["kube-scheduler"]), *controlplane.scheduler_args(kubeconfig, features)],
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
        self._spawn("fault-proxy", argv, port=port)
        proxied = f"https://127.0.0.1:{port}"
        readiness.wait_http(
            self.children["fault-proxy"],
            f"{proxied}/readyz",
            pki.ca_cert,
            token,
            self.stop,
            faulty=True,
        )
        document = controlplane.kubeconfig_document(proxied, pki.ca_cert.read_bytes(), token)
        path = options.dir / COMPONENTS_KUBECONFIG_FILE
        path.write_text(yaml.safe_dump(document))
        path.chmod(0o600)
        self._components_kubeconfig = path

    def _apply_crds(self, client: KubeClient) -> None:
        crds = self._crds()
        for crd in crds:
            client.apply(CRDS, crd)
            log.info("crd applied", extra={"crd": crd["metadata"]["name"]})
        if crds:
            readiness.wait_for_discovery(client, crds, self.stop)

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
            if options.feature_gates:
                argv += ["--feature-gates", options.feature_gates]
            child = self._spawn(
                "webhook",
                argv,
                port=port,
                extra={
                    "health_port": health_port,
                    "metrics_port": metrics_port,
                    "certs": str(cert_dir),
                },
            )
            outcome = self._wait_ready(child, f"http://127.0.0.1:{health_port}/readyz")
            if outcome is Readiness.MISSING:
                return
            if outcome is Readiness.READY:
                gates = parse_feature_gates(options.feature_gates)
                mutating, validating = webhook_configurations(
                    port,
                    bundle.ca.cert_pem,
                    pod_mutation=SCHEDULING_GATES_QUEUE_ADMISSION in gates,
                )
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
                extra={"health_port": health_port, "metrics_port": metrics_port},
            )
            outcome = self._wait_ready(child, f"http://127.0.0.1:{health_port}/readyz")
            if outcome is not Readiness.PORT_TAKEN:
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
            readiness.wait_for_discovery(client, crds, self.stop)
            config = kueue.prepare(
                folder,
                health_port=health_port,
                webhook_port=webhook_port,
                multikueue=self._multikueue_section(),
            )
            argv = kueue.manager_argv(binary, self._components_kubeconfig, config)
            child = self._spawn("kueue", argv, extra={"health_port": health_port})
            self._mount_kueue_certificate(client, child, kueue.cert_dir_of(folder))
            if self._wait_ready(child, f"http://127.0.0.1:{health_port}/readyz") is not (
                Readiness.PORT_TAKEN
            ):
                return
        raise StartupError(f"Kueue found no free port in {PORT_ATTEMPTS} attempts")

    def _multikueue_section(self) -> dict[str, Any] | None:
        if not self.options.multikueue_workers:
            return None
        return multikueue.configuration_section(self.options.multikueue_worker_lost_timeout)

    def _configure_multikueue(self, client: KubeClient) -> None:
        """The manager's MultiKueue objects, written as they are now (a kept --data-dir may hold
        a worker's old address), and a `multikueue` queue on every cluster that has none (its
        quota on a worker: the worker's nodes; an existing queue is the user's)."""
        workers = self.options.multikueue_workers
        for worker in workers:
            client.apply(
                SECRETS, multikueue.kubeconfig_secret(worker, worker.kubeconfig.read_text())
            )
            with KubeClient(worker.kubeconfig) as remote:
                quota = multikueue.nodes_quota(remote.list(NODES).get("items") or [])
                for resource, obj in multikueue.queue_objects(quota):
                    _create_if_absent(remote, resource, obj)
        for resource, obj in multikueue.manager_objects(workers):
            if resource in multikueue.QUEUE_RESOURCES:
                _create_if_absent(client, resource, obj)
            else:
                client.apply(resource, obj)
        self._echo(
            "MultiKueue manager of "
            + ", ".join(f"{w.name} ({w.dir})" for w in workers)
            + f": submit Jobs to LocalQueue {multikueue.QUEUE} with spec.managedBy "
            "kueue.x-k8s.io/multikueue"
        )

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
        if options.external_gang_scheduler:
            argv.append("--no-gang-scheduling")
        self._spawn("simulator", argv)

    # helpers

    def _spawn(
        self,
        name: str,
        argv: Sequence[str],
        *,
        port: int | None = None,
        extra: dict[str, Any] | None = None,
        death_signal: signal.Signals = signal.SIGTERM,
    ) -> Child:
        child = Child(
            name=name,
            argv=argv,
            log_path=self.options.logs / f"{name}.log",
            port=port,
            extra=extra or {},
            death_signal=death_signal,
        )
        child.log_path.parent.mkdir(parents=True, exist_ok=True)
        child.log_path.write_bytes(b"")
        child.start()
        self.children[name] = child
        return child

    def _wait_ready(self, child: Child, url: str) -> Readiness:
        return readiness.wait_ready(child, url, self.stop, self.children, self._echo)

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
        self._echo(banner.render(self.options, self.api_port, self.children))


def _create_if_absent(client: KubeClient, resource: Resource, obj: dict[str, Any]) -> None:
    try:
        client.create(resource, obj, obj["metadata"].get("namespace"))
    except ApiError as err:
        if not err.already_exists:
            raise
