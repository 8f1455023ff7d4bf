"""The chart's `helm test` on `vcjob local up --bare`, where its pods run for real: `helm install
--wait` prints no warning (the webhook's placeholder Secret is Opaque, not an empty
kubernetes.io/tls Secret kube-apiserver would warn about), `helm test --logs` reports one suite and
prints its log once, and `helm uninstall` leaves neither the test pod nor its ServiceAccount.

About two minutes: one bare cluster, one install.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster.running import LocalCluster, running_cluster
from localcluster.tools import PROJECT_ROOT
from tests.support import polling

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHART = str(PROJECT_ROOT / "charts" / "vcjob")
NAMESPACE = "vcjob-hooks"
RELEASE = "vcjob"
TEST_POD = "vcjob-test-admission"
TEST_ACCOUNT = "vcjob-test"
PASSED = "PASS: the webhook denied the invalid Job"
WAIT = 120.0

wait_for = functools.partial(polling.wait_until, timeout=WAIT)


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    workdir = tmp_path_factory.mktemp("bare")
    with running_cluster(workdir, webhook=False, extra_args=["--bare"]) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def helm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("helm-home")


def helm(cluster: LocalCluster, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = cluster.helm(*args, home=home, check=False, timeout=WAIT + 30)
    if done.returncode != 0:
        pytest.fail(f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}")
    return done


def found(cluster: LocalCluster, *args: str, namespace: str = NAMESPACE) -> dict[str, Any] | None:
    done = cluster.kubectl("get", "-n", namespace, *args, "-o", "json", check=False)
    return dict(json.loads(done.stdout)) if done.returncode == 0 else None


@pytest.fixture(scope="module")
def installed(bare: LocalCluster, helm_home: Path) -> subprocess.CompletedProcess[str]:
    return helm(bare, helm_home, "install", RELEASE, CHART, "-n", NAMESPACE, "--create-namespace",
                "--wait", "--timeout", f"{WAIT:.0f}s")  # fmt: skip


def test_install_prints_no_warning(
    bare: LocalCluster, installed: subprocess.CompletedProcess[str]
) -> None:
    # client-go prints the API server's warnings as `W… warnings.go:…] <warning>`.
    assert "PEM data" not in installed.stderr, installed.stderr
    assert "warnings.go" not in installed.stderr, installed.stderr
    secret = found(bare, "secret", "vcjob-webhook-tls")
    assert secret is not None
    # The webhook filled its Secret before it turned Ready.
    assert secret["type"] == "Opaque"
    assert secret["data"]["tls.crt"] and secret["data"]["ca.crt"]


def test_helm_test_reports_one_suite_and_one_log(
    bare: LocalCluster, helm_home: Path, installed: subprocess.CompletedProcess[str]
) -> None:
    for run in (1, 2):  # the second run replaces the first one's pod
        done = helm(bare, helm_home, "test", RELEASE, "-n", NAMESPACE, "--logs",
                    "--timeout", f"{WAIT:.0f}s")  # fmt: skip
        assert done.stdout.count("TEST SUITE:") == 1, done.stdout
        assert f"TEST SUITE:     {TEST_POD}" in done.stdout
        assert done.stdout.count(PASSED) == 1, done.stdout
        assert "note:" not in done.stdout, done.stdout
        pod = found(bare, "pod", TEST_POD)
        account = found(bare, "serviceaccount", TEST_ACCOUNT)
        assert pod is not None and account is not None, f"run {run}"
        assert found(bare, "rolebinding", TEST_ACCOUNT, namespace="default") is not None
        assert pod["status"]["phase"] == "Succeeded"
        owners = pod["metadata"].get("ownerReferences") or []
        assert [(o["kind"], o["name"], o["uid"]) for o in owners] == [
            ("ServiceAccount", TEST_ACCOUNT, account["metadata"]["uid"])
        ]


def test_uninstall_leaves_no_test_pod_nor_its_account(
    bare: LocalCluster, helm_home: Path, installed: subprocess.CompletedProcess[str]
) -> None:
    assert found(bare, "pod", TEST_POD) is not None, "helm test has not run"
    helm(bare, helm_home, "uninstall", RELEASE, "-n", NAMESPACE, "--wait",
         "--timeout", f"{WAIT:.0f}s")  # fmt: skip
    # The grant to create Jobs is in the test's namespace (`tests.namespace`, default).
    for namespace, kind, name in (
        (NAMESPACE, "serviceaccount", TEST_ACCOUNT),
        ("default", "role", TEST_ACCOUNT),
        ("default", "rolebinding", TEST_ACCOUNT),
        (NAMESPACE, "role", f"{TEST_ACCOUNT}-owner"),
        (NAMESPACE, "rolebinding", f"{TEST_ACCOUNT}-owner"),
    ):
        assert found(bare, kind, name, namespace=namespace) is None, f"{kind} {name} is left"
    # The garbage collector deletes the pod with its owner, the ServiceAccount.
    wait_for("the test pod to go with the release", lambda: found(bare, "pod", TEST_POD) is None)
