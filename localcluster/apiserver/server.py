"""Run the API server: TLS with its own CA, uvicorn on a private event loop thread, kubeconfig.

The kubeconfig's token is the admin (`system:masters`); ServiceAccount tokens are authorized by
RBAC (see `security.py`), and `--audit-log` records every request.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import datetime as dt
import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
import yaml

from localcluster.apiserver import bootstrap, tokens
from localcluster.apiserver.app import Application
from localcluster.apiserver.audit import AuditLog
from localcluster.apiserver.faults import FaultInjector
from localcluster.apiserver.podlogs import PodLogs
from localcluster.apiserver.registry import NAMESPACE_TYPE, Registry
from localcluster.apiserver.rest import Api
from localcluster.apiserver.security import Security
from localcluster.apiserver.storage import DEFAULT_HISTORY, Store
from localcluster.apiserver.validation import now_rfc3339, random_uid
from localcluster.apiserver.watch import WatchOptions
from shared import certgen

log = logging.getLogger(__name__)

CLUSTER_NAME = "vcjob-local"
KUBECONFIG_FILE = "kubeconfig"
PORT_FILE = "apiserver.port"
SERVING_HOSTS = [
    "127.0.0.1",
    "localhost",
    "kubernetes.default.svc",
    "kubernetes.default",
    "kubernetes",
]
# The admin's token: the API server listens on loopback only, for one developer.
DEFAULT_TOKEN = "vcjob-local-token"  # noqa: S105
BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class APIServerConfig:
    directory: Path
    port: int = 0
    host: str = "127.0.0.1"
    data_dir: Path | None = None
    fault_rate: float = 0.0
    fault_seed: int | None = None
    history_size: int = DEFAULT_HISTORY
    bookmark_interval: float = 10.0
    hang_seconds: float = 35.0
    write_kubeconfig: bool = True
    audit_log: Path | None = None
    # Where the simulated kubelet keeps the logs of pods that really run (`kubectl logs`).
    pods_dir: Path | None = None
    admin_token: str = DEFAULT_TOKEN
    extra: dict[str, Any] = field(default_factory=dict)


def kubeconfig_document(url: str, ca_pem: bytes, token: str = DEFAULT_TOKEN) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER_NAME,
                "cluster": {
                    "server": url,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": CLUSTER_NAME, "user": {"token": token}}],
        "contexts": [
            {
                "name": CLUSTER_NAME,
                "context": {"cluster": CLUSTER_NAME, "user": CLUSTER_NAME, "namespace": "default"},
            }
        ],
        "current-context": CLUSTER_NAME,
        "preferences": {},
    }


class _Server(uvicorn.Server):
    """uvicorn, telling the application when a signal asks it to stop (watches end then)."""

    def __init__(self, config: uvicorn.Config, app: Application) -> None:
        super().__init__(config)
        self._app = app

    def handle_exit(self, sig: int, frame: Any) -> None:
        self._app.shutting_down = True
        super().handle_exit(sig, frame)


class APIServer:
    """The local kube-apiserver, runnable in-process (`start`/`stop`) or as the main program."""

    def __init__(self, config: APIServerConfig) -> None:
        self.config = config
        self.directory = Path(config.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        pki = self.directory / "pki"
        self.ca_pem: bytes = self._certificates(pki)
        self._cert_file = pki / certgen.CERT_FILE
        self._key_file = pki / certgen.KEY_FILE
        self.registry = Registry()
        self.store = Store(config.data_dir, config.history_size)
        self.api = Api(self.registry, self.store)
        self.api.load_crds()
        faults = FaultInjector(config.fault_rate, config.fault_seed, config.hang_seconds)
        self.audit = AuditLog(Path(config.audit_log)) if config.audit_log else None
        self.token_issuer = tokens.TokenIssuer(tokens.load_or_create_key(pki))
        self.security = Security(self.store, self.token_issuer, config.admin_token, self.audit)
        self.app = Application(
            self.api, faults, WatchOptions(config.bookmark_interval), self.security
        )
        self.app.pod_logs = PodLogs(self.store, config.pods_dir)
        self._socket = self._bind()
        self.port: int = self._socket.getsockname()[1]
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ensure_namespaces()
        self._ensure_bootstrap_policy()
        self._ensure_kubernetes_service()

    @staticmethod
    def _certificates(pki: Path) -> bytes:
        """Reuse the CA and serving certificate of an earlier run while they stay valid.

        A restart then keeps existing kubeconfigs working; otherwise a fresh CA is issued.
        """
        files = [pki / certgen.CA_FILE, pki / certgen.CERT_FILE, pki / certgen.KEY_FILE]
        if all(f.exists() for f in files):
            try:
                expires = certgen.not_after(files[1].read_bytes())
                if expires - dt.datetime.now(dt.UTC) > dt.timedelta(days=1):
                    return files[0].read_bytes()
            except ValueError:
                log.warning("unreadable serving certificate, issuing a new one")
        bundle = certgen.issue(SERVING_HOSTS)
        certgen.write_bundle(bundle, pki)
        return bundle.ca.cert_pem

    @property
    def url(self) -> str:
        return f"https://{self.config.host}:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        return self.directory / KUBECONFIG_FILE

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((self.config.host, self.config.port))
        except OSError:
            sock.close()
            raise
        sock.listen(512)
        sock.set_inheritable(True)
        return sock

    def _ensure_namespaces(self) -> None:
        for name in BUILTIN_NAMESPACES:
            if self.store.get(NAMESPACE_TYPE.storage_key, "", name) is None:
                self.store.put(
                    NAMESPACE_TYPE.storage_key,
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {
                            "name": name,
                            "uid": random_uid(),
                            "creationTimestamp": now_rfc3339(),
                            "labels": {"kubernetes.io/metadata.name": name},
                        },
                        "spec": {"finalizers": ["kubernetes"]},
                        "status": {"phase": "Active"},
                    },
                    "ADDED",
                )

    def _ensure_bootstrap_policy(self) -> None:
        """Create the bootstrap ClusterRoles and bindings that are missing (kept if edited)."""
        for plural, objects in (
            ("clusterroles", bootstrap.CLUSTER_ROLES),
            ("clusterrolebindings", bootstrap.CLUSTER_ROLE_BINDINGS),
        ):
            key = (bootstrap.RBAC_API.split("/")[0], plural)
            for template in objects:
                if self.store.get(key, "", template["metadata"]["name"]) is not None:
                    continue
                obj = copy.deepcopy(template)
                obj["metadata"]["uid"] = random_uid()
                obj["metadata"]["creationTimestamp"] = now_rfc3339()
                self.store.put(key, obj, "ADDED")

    def _ensure_kubernetes_service(self) -> None:
        """The `kubernetes` Service in `default` and its endpoints: this server's address (the
        port may differ from the last run, so the endpoints are rewritten)."""
        host, port = self.config.host, self.port
        for key, obj, overwrite in (
            (("", "services"), bootstrap.kubernetes_service(port), False),
            (("", "endpoints"), bootstrap.kubernetes_endpoints(host, port), True),
            (
                ("discovery.k8s.io", "endpointslices"),
                bootstrap.kubernetes_endpoint_slice(host, port),
                True,
            ),
        ):
            old = self.store.get(key, "default", "kubernetes")
            if old is not None and not overwrite:
                continue
            if old is not None and _same_payload(old, obj):
                continue  # same address as last run: no write, no resourceVersion bump
            metadata = obj["metadata"]
            metadata["uid"] = old["metadata"]["uid"] if old else random_uid()
            metadata["creationTimestamp"] = (
                old["metadata"]["creationTimestamp"] if old else now_rfc3339()
            )
            self.store.put(key, obj, "MODIFIED" if old else "ADDED")

    def _uvicorn_server(self) -> uvicorn.Server:
        config = uvicorn.Config(
            self.app,
            host=self.config.host,
            port=self.port,
            http="h11",
            ws="wsproto",
            lifespan="off",
            access_log=False,
            log_config=None,
            log_level="warning",
            ssl_certfile=str(self._cert_file),
            ssl_keyfile=str(self._key_file),
            timeout_keep_alive=120,
            timeout_graceful_shutdown=1,
            backlog=512,
        )
        return _Server(config, self.app)

    def write_files(self) -> None:
        if not self.config.write_kubeconfig:
            return
        document = kubeconfig_document(self.url, self.ca_pem)
        target = self.kubeconfig_path
        temporary = target.with_suffix(".tmp")
        temporary.write_text(yaml.safe_dump(document, sort_keys=False))
        temporary.chmod(0o600)
        temporary.replace(target)
        (self.directory / PORT_FILE).write_text(f"{self.port}\n")

    # -- in-process --------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        """Serve on a background thread; return once the server answers."""
        server = self._uvicorn_server()
        self._server = server
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            ready.set()
            try:
                loop.run_until_complete(server.serve(sockets=[self._socket]))
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="vcjob-apiserver", daemon=True)
        self._thread.start()
        ready.wait(timeout)
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the API server stopped while starting")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the API server did not start within {timeout}s")
            time.sleep(0.01)
        self.write_files()

    def stop(self, timeout: float = 10.0) -> None:
        self.app.shutting_down = True
        if self._loop is not None and not self._loop.is_closed() and self._server is not None:
            closing = asyncio.run_coroutine_threadsafe(self.api.aclose(), self._loop)
            with contextlib.suppress(Exception):
                closing.result(timeout=5)
        if self._server is not None:
            self._server.should_exit = True
            if self._loop is not None and not self._loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self.store.close_watchers_all)
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(timeout)
        self._socket.close()
        self.store.close()
        if self.audit is not None:
            self.audit.close()

    # -- main program ------------------------------------------------------------------------

    def serve_forever(self) -> None:
        server = self._uvicorn_server()
        self._server = server

        async def main() -> None:
            task = asyncio.create_task(server.serve(sockets=[self._socket]))
            while not server.started:
                if task.done():
                    await task
                    return
                await asyncio.sleep(0.01)
            self.write_files()
            log.info(
                "API server listening",
                extra={"url": self.url, "kubeconfig": str(self.kubeconfig_path)},
            )
            await task

        try:
            asyncio.run(main())
        finally:
            self._socket.close()
            self.store.close()


def _same_payload(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a bootstrap object would be rewritten with what it already holds."""
    return all(old.get(k) == v for k, v in new.items() if k != "metadata")
