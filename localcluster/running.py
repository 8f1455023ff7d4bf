"""A running local cluster driven from a Python process: `vcjob local up` in a subprocess on a free
port, with the pinned kubectl and helm pointed at it. The demo (`make demo`), the benchmarks
(bench/), the scripts (scripts/) and the tests all start their clusters this way.

    with running_cluster(workdir) as cluster:
        cluster.kubectl("create", "-f", "examples/demo-job.yaml")
        api = kubernetes.client.CustomObjectsApi(cluster.api_client())

The context manager returns once the API server answers, the CRDs are served and (with the webhook)
the webhook configurations are registered. On exit it sends SIGTERM, kills what is left after a
deadline, and when the block raised, prints the cluster's logs to stderr (for a test report, say).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as kube_client
from kubernetes import config as kube_config

from localcluster.bootstrap import MUTATING_CONFIG_NAME, VALIDATING_CONFIG_NAME
from localcluster.children import process_alive
from localcluster.clusterdir import KUBE_CACHE_DIR, KUBECONFIG_FILE, LOG_DIR, read_state
from localcluster.simulator.client import (
    MUTATING_WEBHOOKS,
    VALIDATING_WEBHOOKS,
    ApiError,
    KubeClient,
)
from localcluster.tools import bin_dirs, tool_path

STARTUP_TIMEOUT = 180.0
STOP_TIMEOUT = 15.0
UP_LOG = "local-up.log"


class ClusterStartError(RuntimeError):
    """The local cluster did not become ready; the message carries its log."""


class ToolError(subprocess.CalledProcessError):
    """A failed kubectl or helm call whose message shows the command and what the tool printed."""

    def __str__(self) -> str:
        return (
            f"{Path(self.cmd[0]).name} {' '.join(self.cmd[1:])} exited with {self.returncode}\n"
            f"stdout: {self.stdout}\nstderr: {self.stderr}"
        )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def vcjob_executable() -> list[str]:
    script = Path(sys.executable).with_name("vcjob")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from shared.cli import main; sys.exit(main())"]


def tools_env() -> dict[str, str]:
    """The environment with the pinned kubectl and helm first on PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([*map(str, bin_dirs()), env.get("PATH", "")])
    return env


@dataclass
class LocalCluster:
    """A running local cluster: kubeconfig, API port, folder and the `vcjob local up` process."""

    kubeconfig: Path
    port: int
    dir: Path
    process: subprocess.Popen[bytes]
    _clients: list[kube_client.ApiClient] = field(default_factory=list, repr=False)
    _rest_clients: list[KubeClient] = field(default_factory=list, repr=False)

    @property
    def state(self) -> dict[str, Any]:
        """The contents of DIR/local.json (ports, pids, log paths of every component)."""
        return read_state(self.dir) or {}

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the pinned kubectl against this cluster; raises ToolError when check fails. Its
        discovery and HTTP cache go to KUBECACHEDIR when set, else to the cluster's folder (never
        to ~/.kube/cache)."""
        kubectl = tool_path("kubectl")
        if kubectl is None:
            raise FileNotFoundError("kubectl is not installed; run `make tools`")
        argv = [str(kubectl), "--kubeconfig", str(self.kubeconfig), *args]
        env = tools_env()
        env.setdefault("KUBECACHEDIR", str(self.dir / KUBE_CACHE_DIR))
        result = subprocess.run(
            argv,
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        if check and result.returncode != 0:
            raise ToolError(result.returncode, argv, result.stdout, result.stderr)
        return result

    def helm(
        self, *args: str, home: Path, check: bool = True, timeout: float = 150
    ) -> subprocess.CompletedProcess[str]:
        """Run the pinned helm against this cluster with its cache, config and data under `home`
        (so tests share nothing with the user's helm); raises ToolError when check fails."""
        helm = tool_path("helm")
        if helm is None:
            raise FileNotFoundError("helm is not installed; run `make tools`")
        env = tools_env()
        env.update(
            {
                "KUBECONFIG": str(self.kubeconfig),
                "HOME": str(home),
                "HELM_CACHE_HOME": str(home / "cache"),
                "HELM_CONFIG_HOME": str(home / "config"),
                "HELM_DATA_HOME": str(home / "data"),
            }
        )
        argv = [str(helm), *args]
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
        if check and result.returncode != 0:
            raise ToolError(result.returncode, argv, result.stdout, result.stderr)
        return result

    def api_client(self) -> kube_client.ApiClient:
        """An official-client ApiClient for this cluster (closed when the cluster stops)."""
        api = kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(self.kubeconfig), persist_config=False
        )
        if not isinstance(api, kube_client.ApiClient):
            raise TypeError("new_client_from_config returned no ApiClient")
        self._clients.append(api)
        return api

    def rest_client(self) -> KubeClient:
        """A plain-dict JSON client (httpx) for this cluster (closed when the cluster stops)."""
        client = KubeClient(self.kubeconfig)
        self._rest_clients.append(client)
        return client

    def logs(self) -> str:
        """`vcjob local up`'s output followed by every component's log."""
        parts = []
        for path in [self.dir / UP_LOG, *sorted((self.dir / LOG_DIR).glob("*.log"))]:
            with contextlib.suppress(OSError):
                parts.append(f"===== {path.name} =====\n{path.read_text(errors='replace')}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Stop `vcjob local up` and every component it started (a cluster lost, for a test)."""
        _stop(self)

    def component_pids(self) -> dict[str, int]:
        components = self.state.get("components") or {}
        return {
            name: int(info["pid"])
            for name, info in components.items()
            if isinstance(info, dict) and info.get("pid")
        }


def _stop(cluster: LocalCluster) -> None:
    pids = cluster.component_pids()
    for api in cluster._clients:
        api.close()  # type: ignore[no-untyped-call]
    for client in cluster._rest_clients:
        client.close()
    if cluster.process.poll() is None:
        cluster.process.send_signal(signal.SIGTERM)
        try:
            cluster.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            cluster.process.kill()
            cluster.process.wait(5)
    # Whatever survived its parent (which should be nothing) is killed outright.
    deadline = time.monotonic() + 5
    for pid in pids.values():
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if process_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _check_webhook_registered(cluster: LocalCluster) -> None:
    with KubeClient(cluster.kubeconfig) as client:
        for resource, name in (
            (MUTATING_WEBHOOKS, MUTATING_CONFIG_NAME),
            (VALIDATING_WEBHOOKS, VALIDATING_CONFIG_NAME),
        ):
            try:
                client.get(resource, name)
            except ApiError as err:
                raise ClusterStartError(
                    f"the webhook is not registered ({resource.plural}/{name}: {err}); "
                    f"is `vcjob webhook` available?\n{cluster.logs()}"
                ) from err


def _wait_ready(cluster: LocalCluster, log_file: Path, webhook: bool) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        code = cluster.process.poll()
        if code is not None:
            raise ClusterStartError(
                f"vcjob local up exited with code {code} while starting\n{cluster.logs()}"
            )
        state = read_state(cluster.dir)
        if state and state.get("ready") and state.get("pid") == cluster.process.pid:
            cluster.port = int(state.get("port") or cluster.port)
            if webhook:
                _check_webhook_registered(cluster)
            return
        time.sleep(0.1)
    raise ClusterStartError(
        f"the local cluster was not ready within {STARTUP_TIMEOUT:.0f}s (see {log_file})\n"
        + cluster.logs()
    )


@contextlib.contextmanager
def running_cluster(
    workdir: Path,
    *,
    simulator: bool = True,
    webhook: bool = True,
    controller: bool = False,
    nodes: int = 3,
    node_gpu: int = 0,
    pod_runtime: str = "2s",
    fault_rate: float = 0.0,
    extra_args: Sequence[str] = (),
) -> Iterator[LocalCluster]:
    """Start `vcjob local up --dir workdir` on a free port; stop it (and its children) on exit.

    `cluster.port` is the API server's port once the cluster is ready.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [
        *vcjob_executable(),
        "local",
        "up",
        # The API server picks a free port itself (no race with other tests); local.json says which.
        "--port", "0",
        "--dir", str(workdir),
        "--nodes", str(nodes),
        "--node-gpu", str(node_gpu),
        "--pod-runtime", pod_runtime,
        "--fault-rate", str(fault_rate),
        "--log-format", "text",
    ]  # fmt: skip
    if not simulator:
        argv.append("--no-simulator")
    if not webhook:
        argv.append("--no-webhook")
    if not controller:
        argv.append("--no-controller")
    argv += list(extra_args)
    log_file = workdir / UP_LOG
    with log_file.open("wb") as output:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, env=tools_env()
        )
    cluster = LocalCluster(
        kubeconfig=workdir / KUBECONFIG_FILE, port=0, dir=workdir, process=process
    )
    try:
        _wait_ready(cluster, log_file, webhook)
        yield cluster
    except BaseException:
        _stop(cluster)
        sys.stderr.write(f"local cluster logs ({workdir}):\n{cluster.logs()}\n")
        raise
    else:
        _stop(cluster)
