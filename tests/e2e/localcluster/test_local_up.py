"""`vcjob local up` as a user runs it: kubectl works, and SIGTERM leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.clusterdir import KUBE_CACHE_DIR
from localcluster.running import UP_LOG, LocalCluster, running_cluster, vcjob_executable
from localcluster.tools import TOOLS_BIN
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("local-up"), controller=True, nodes=2, node_gpu=2
    ) as running:
        yield running


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has exited all the same.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return False


def test_kubectl_sees_nodes_queues_and_crds(cluster: LocalCluster) -> None:
    listing = cluster.kubectl("get", "nodes,queues,crds", "-o", "name").stdout.split()
    assert {"node/node-1", "node/node-2", "queue.scheduling.volcano.sh/default"} <= set(listing)
    assert "customresourcedefinition.apiextensions.k8s.io/jobs.batch.volcano.sh" in listing
    state = cluster.kubectl(
        "get", "queue", "default", "-o", "jsonpath={.status.state} {.spec.weight}"
    ).stdout
    assert state == "Open 1"
    gpus = cluster.kubectl(
        "get", "node", "node-1", "-o", "jsonpath={.status.allocatable.nvidia\\.com/gpu}"
    ).stdout
    assert gpus == "2"


def test_namespaces_and_webhook_configurations_exist(cluster: LocalCluster) -> None:
    namespaces = cluster.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert {"namespace/default", "namespace/kube-system", "namespace/vcjob-system"} <= set(
        namespaces
    )
    url = cluster.kubectl(
        "get",
        "validatingwebhookconfiguration",
        "vcjob-validate",
        "-o",
        "jsonpath={.webhooks[0].clientConfig.url}",
    ).stdout
    webhook_port = cluster.state["components"]["webhook"]["port"]
    assert url == f"https://127.0.0.1:{webhook_port}/validate-batch-volcano-sh-v1alpha1-job"


def test_local_kubeconfig_prints_the_path(cluster: LocalCluster) -> None:
    result = subprocess.run(
        [*vcjob_executable(), "local", "kubeconfig", "--dir", str(cluster.dir)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert result.stdout.strip() == str(cluster.kubeconfig.resolve())


def test_the_banners_export_lines_keep_kubectls_cache_out_of_home(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """A shell that follows the banner's KUBECONFIG and KUBECACHEDIR lines runs kubectl against
    the cluster, and kubectl's discovery cache lands in the cluster's folder, not in ~/.kube."""
    printed = (cluster.dir / UP_LOG).read_text().splitlines()
    exports = [
        line.split(" #", 1)[0].strip()
        for line in printed
        if line.strip().startswith(("export KUBECONFIG=", "export KUBECACHEDIR="))
    ]
    assert len(exports) == 2, printed
    cache = cluster.dir / KUBE_CACHE_DIR
    shutil.rmtree(cache, ignore_errors=True)
    home = tmp_path / "home"
    home.mkdir()
    script = "\n".join([*exports, "kubectl get nodes -o name"])
    result = subprocess.run(
        ["/bin/bash", "--noprofile", "--norc", "-c", script],
        env={"HOME": str(home), "PATH": f"{TOOLS_BIN}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "node/node-1" in result.stdout.split()
    assert sorted(home.rglob("*")) == []
    assert any(cache.rglob("*.json"))


def test_local_kubeconfig_without_a_cluster_is_an_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [*vcjob_executable(), "local", "kubeconfig", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode != 0
    assert "no kubeconfig" in result.stderr


def test_help_documents_every_flag() -> None:
    help_text = subprocess.run(
        [*vcjob_executable(), "local", "up", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    for flag in (
        "--port",
        "--dir",
        "--no-simulator",
        "--no-controller",
        "--no-webhook",
        "--nodes",
        "--node-cpu",
        "--node-memory",
        "--node-gpu",
        "--pod-runtime",
        "--fault-rate",
        "--data-dir",
        "--elastic-period",
        "--log-format",
    ):
        assert flag in help_text


def test_a_second_up_in_the_same_folder_is_refused(cluster: LocalCluster) -> None:
    result = subprocess.run(
        [*vcjob_executable(), "local", "up", "--port", "0", "--dir", str(cluster.dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "already running" in result.stderr
    assert cluster.state["pid"] == cluster.process.pid
    assert cluster.state["ready"] is True
    assert cluster.kubeconfig.exists()


def test_sigterm_stops_every_child(cluster: LocalCluster) -> None:
    pids = cluster.component_pids()
    components = {"etcd", "kube-apiserver", "kube-controller-manager", "webhook", "simulator"}
    assert components <= set(pids)
    cluster.process.send_signal(signal.SIGTERM)
    assert cluster.process.wait(30) == 0
    wait_for(
        lambda: {name for name, pid in pids.items() if alive(pid)},
        lambda living: living == set(),
        "every child stopped",
        5,
        interval=0.1,
    )
    assert cluster.kubeconfig.exists(), "the kubeconfig is left for the user"
    assert cluster.state["ready"] is False
    # vcjob's own processes (controller with its CronJob and Queue loops, webhook, node agent)
    # stop without a traceback.
    for log in sorted((cluster.dir / "logs").glob("*.log")):
        if log.stem in ("controller", "webhook", "simulator"):
            assert "Traceback" not in log.read_text(errors="replace"), log


def test_components_do_not_outlive_a_killed_up(tmp_path: Path) -> None:
    with running_cluster(tmp_path, webhook=False, nodes=1) as doomed:
        pids = doomed.component_pids()
        doomed.process.send_signal(signal.SIGKILL)
        doomed.process.wait(10)
        # Each component gets a signal from the kernel (PR_SET_PDEATHSIG): SIGTERM, so it stops as
        # under `up`'s own SIGTERM, whose test above allows it 30 s; kube-apiserver SIGKILL, since
        # its graceful stop would wait on the etcd stopping beside it.
        wait_for(
            lambda: {name for name, pid in pids.items() if alive(pid)},
            lambda living: living == set(),
            "every component stopped",
            30,
            interval=0.1,
        )
