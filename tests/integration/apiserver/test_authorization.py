"""Authentication, RBAC, impersonation, access reviews and the audit log, through kubectl."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.apiserver.audit import read_audit_log
from localcluster.apiserver.server import APIServer, APIServerConfig
from localcluster.tools import tool_path

from .conftest import Kubectl

SA = "system:serviceaccount:authz:bot"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServer]:
    directory = tmp_path_factory.mktemp("audited")
    server = APIServer(APIServerConfig(directory=directory, audit_log=directory / "audit.log"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kc(audited: APIServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = tool_path("kubectl")
    if binary is None:
        raise RuntimeError("kubectl is not installed: run `python -m localcluster.tools install`")
    kubectl = Kubectl(str(binary), audited.kubeconfig_path, tmp_path_factory.mktemp("home"))
    kubectl.run("create", "namespace", "authz")
    kubectl.run("create", "serviceaccount", "bot", "-n", "authz")
    return kubectl


@pytest.fixture(scope="module")
def token(kc: Kubectl) -> str:
    return kc.run("create", "token", "bot", "-n", "authz").stdout.strip()


def test_service_account_is_refused_with_kube_wording(kc: Kubectl, token: str) -> None:
    refused = kc.run("get", "pods", "-n", "authz", "--token", token, check=False)
    assert refused.returncode != 0
    assert (
        f'Error from server (Forbidden): pods is forbidden: User "{SA}" cannot list resource '
        '"pods" in API group "" in the namespace "authz"'
    ) in refused.stderr


def test_role_binding_grants_only_its_namespace_and_names(kc: Kubectl, token: str) -> None:
    kc.run("create", "role", "cm-reader", "-n", "authz", "--verb=get", "--resource=configmaps",
           "--resource-name=allowed")  # fmt: skip
    kc.run("create", "rolebinding", "bot-cm", "-n", "authz", "--role=cm-reader",
           "--serviceaccount=authz:bot")  # fmt: skip
    kc.run("create", "configmap", "allowed", "-n", "authz")
    kc.run("create", "configmap", "other", "-n", "authz")
    assert kc.run("get", "cm", "allowed", "-n", "authz", "--token", token).returncode == 0
    other = kc.run("get", "cm", "other", "-n", "authz", "--token", token, check=False)
    assert 'configmaps "other" is forbidden' in other.stderr
    listed = kc.run("get", "cm", "-n", "authz", "--token", token, check=False)
    assert "cannot list resource" in listed.stderr


def test_can_i_and_impersonation(kc: Kubectl) -> None:
    def can_i(*args: str) -> str:
        return kc.run("auth", "can-i", *args, check=False).stdout.strip()

    assert can_i("list", "secrets", "-A", f"--as={SA}") == "no"
    assert can_i("get", "configmaps/allowed", "-n", "authz", f"--as={SA}") == "yes"
    assert can_i("get", "configmaps/other", "-n", "authz", f"--as={SA}") == "no"
    assert can_i("delete", "nodes") == "yes"
    assert can_i("get", "/healthz", "--as=nobody") == "yes"
    kc.run("create", "clusterrole", "secret-lister", "--verb=list", "--resource=secrets")
    kc.run("create", "clusterrolebinding", "devs-secrets", "--clusterrole=secret-lister",
           "--group=devs")  # fmt: skip
    assert can_i("list", "secrets", "-A", "--as=alice") == "no"
    assert can_i("list", "secrets", "-A", "--as=alice", "--as-group=devs") == "yes"
    listed = kc.run("auth", "can-i", "--list", "-n", "authz", f"--as={SA}").stdout
    assert "configmaps" in listed and "[allowed]" in listed


def test_impersonation_needs_its_own_grant(kc: Kubectl, token: str) -> None:
    refused = kc.run("get", "ns", "--token", token, "--as=alice", check=False)
    assert (
        f'users "alice" is forbidden: User "{SA}" cannot impersonate resource "users" in API '
        'group "" at the cluster scope'
    ) in refused.stderr


def test_unknown_token_is_unauthorized(kc: Kubectl) -> None:
    refused = kc.run("get", "ns", "--token", "not-a-token", check=False)
    assert "Unauthorized" in refused.stderr


def test_deleted_service_account_token_stops_working(kc: Kubectl) -> None:
    kc.run("create", "serviceaccount", "temp", "-n", "authz")
    temp = kc.run("create", "token", "temp", "-n", "authz").stdout.strip()
    assert "system:serviceaccount:authz:temp" in kc.run("auth", "whoami", "--token", temp).stdout
    kc.run("delete", "serviceaccount", "temp", "-n", "authz")
    assert "Unauthorized" in kc.run("auth", "whoami", "--token", temp, check=False).stderr


def test_audit_log_records_every_request(audited: APIServer, kc: Kubectl, token: str) -> None:
    kc.run("get", "pods", "-n", "authz", "--token", token, check=False)
    assert audited.config.audit_log is not None
    records = read_audit_log(Path(audited.config.audit_log))
    refused = [
        r for r in records if r["user"] == SA and r["resource"] == "pods" and r["verb"] == "list"
    ]
    assert refused and refused[-1]["code"] == 403 and refused[-1]["namespace"] == "authz"
    created = [r for r in records if r["verb"] == "create" and r["resource"] == "serviceaccounts"]
    assert created[0]["user"] == "system:admin" and created[0]["code"] == 201
    fields = {"user", "verb", "resource", "namespace", "name", "code"}
    assert all(fields <= set(r) for r in records)
