"""RBAC decisions, reasons and kube-apiserver's 403 wording."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.apiserver.rbac import (
    Policy,
    authorize,
    forbidden_message,
    resource_matches,
    rule_allows,
    rules_for,
)
from localcluster.apiserver.requestinfo import Attributes
from localcluster.apiserver.users import ADMIN, UserInfo, service_account_groups

BOT = UserInfo("system:serviceaccount:ns:bot", service_account_groups("ns"))


def res(
    verb: str, resource: str, *, group: str = "", ns: str = "", name: str = "", sub: str = ""
) -> Attributes:
    return Attributes(
        verb,
        resource_request=True,
        api_group=group,
        namespace=ns,
        resource=resource,
        subresource=sub,
        name=name,
    )


def path(verb: str, url: str) -> Attributes:
    return Attributes(verb, path=url)


RULE_CASES: list[tuple[dict[str, Any], Attributes, bool]] = [
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("get", "pods"), True),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("list", "pods"), False),
    ({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}, res("delete", "pods"), True),
    ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}, res("get", "pods"), False),
    (
        {"verbs": ["get"], "apiGroups": ["*"], "resources": ["pods"]},
        res("get", "pods", group="x"),
        True,
    ),
    (
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
        res("get", "pods", sub="log"),
        False,
    ),
    (
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]},
        res("get", "pods", sub="log"),
        True,
    ),
    (
        {"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]},
        res("get", "pods", sub="log"),
        True,
    ),
    (
        {"verbs": ["get"], "apiGroups": [""], "resources": ["*"]},
        res("get", "pods", sub="status"),
        True,
    ),
    (
        {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
        res("get", "secrets", name="a"),
        True,
    ),
    (
        {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
        res("get", "secrets", name="b"),
        False,
    ),
    (
        {"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
        res("list", "secrets"),
        False,
    ),
    ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, path("get", "/healthz"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, path("get", "/apis/apps/v1"), True),
    ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, path("get", "/api"), False),
    ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, path("post", "/healthz"), False),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, path("get", "/pods"), False),
]


@pytest.mark.parametrize(("rule", "attrs", "allowed"), RULE_CASES)
def test_rule_matching(rule: dict[str, Any], attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(rule, attrs) is allowed


def test_subresource_wildcard_needs_the_exact_subresource() -> None:
    assert not resource_matches({"resources": ["*/status"]}, "pods/log", "log")


def _role(name: str, rules: list[dict[str, Any]], ns: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"metadata": meta, "rules": rules}


def _binding(
    name: str, kind: str, role: str, subjects: list[dict[str, Any]], ns: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"metadata": meta, "roleRef": {"kind": kind, "name": role}, "subjects": subjects}


POLICY = Policy(
    cluster_roles={
        "reader": _role(
            "reader", [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]
        ),
        "agg": {
            "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "1"}}]},
        },
        "part": {
            "metadata": {"name": "part", "labels": {"a": "1"}},
            "rules": [{"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"]}],
        },
    },
    roles={
        ("ns", "leases"): _role(
            "leases",
            [
                {
                    "verbs": ["update"],
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "resourceNames": ["lock"],
                }
            ],
            "ns",
        )
    },
    cluster_role_bindings=[
        _binding("read-all", "ClusterRole", "reader", [{"kind": "Group", "name": "readers"}]),
        _binding("agg", "ClusterRole", "agg", [{"kind": "User", "name": "alice"}]),
    ],
    role_bindings=[
        _binding("bot-leases", "Role", "leases", [{"kind": "ServiceAccount", "name": "bot"}], "ns"),
        _binding(
            "bot-read",
            "ClusterRole",
            "reader",
            [{"kind": "ServiceAccount", "name": "bot", "namespace": "ns"}],
            "ns",
        ),
        _binding(
            "broken",
            "ClusterRole",
            "missing",
            [{"kind": "ServiceAccount", "name": "bot", "namespace": "ns"}],
            "other",
        ),
    ],
)

DECISIONS = [
    (
        BOT,
        res("list", "pods", ns="ns"),
        True,
        'RBAC: allowed by RoleBinding "bot-read/ns" of ClusterRole "reader" '
        'to ServiceAccount "bot/ns"',
    ),
    (BOT, res("list", "pods"), False, ""),
    (BOT, res("list", "pods", ns="elsewhere"), False, ""),
    (
        BOT,
        res("update", "leases", group="coordination.k8s.io", ns="ns", name="lock"),
        True,
        'RBAC: allowed by RoleBinding "bot-leases/ns" of Role "leases" to ServiceAccount "bot/ns"',
    ),
    (BOT, res("update", "leases", group="coordination.k8s.io", ns="ns", name="other"), False, ""),
    (
        BOT,
        res("get", "pods", ns="other"),
        False,
        'RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found',
    ),
    (
        UserInfo("carol", ("readers",)),
        res("get", "pods"),
        True,
        'RBAC: allowed by ClusterRoleBinding "read-all" of ClusterRole "reader" to Group "readers"',
    ),
    (
        UserInfo("alice"),
        res("get", "deployments", group="apps", ns="x"),
        True,
        'RBAC: allowed by ClusterRoleBinding "agg" of ClusterRole "agg" to User "alice"',
    ),
    (ADMIN, res("delete", "anything", group="x"), True, ""),
]


@pytest.mark.parametrize(("user", "attrs", "allowed", "reason"), DECISIONS)
def test_authorize(user: UserInfo, attrs: Attributes, allowed: bool, reason: str) -> None:
    decision = authorize(user, attrs, POLICY)
    assert (decision.allowed, decision.reason) == (allowed, reason)


def test_rules_for_lists_what_the_namespace_grants() -> None:
    resource_rules, other, incomplete = rules_for(BOT, "ns", POLICY)
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in resource_rules
    assert not other and not incomplete
    assert rules_for(BOT, "other", POLICY)[2] is True


MESSAGES = [
    (
        res("list", "pods", ns="default"),
        "",
        'pods is forbidden: User "u" cannot list resource "pods" in API group "" '
        'in the namespace "default"',
    ),
    (
        res("get", "jobs", group="batch.volcano.sh", ns="d", name="j", sub="status"),
        "",
        'jobs.batch.volcano.sh "j" is forbidden: User "u" cannot get resource "jobs/status" '
        "in API group "
        '"batch.volcano.sh" in the namespace "d"',
    ),
    (
        res("list", "secrets"),
        "",
        'secrets is forbidden: User "u" cannot list resource "secrets" in API group "" '
        "at the cluster scope",
    ),
    (path("get", "/metrics"), "", 'forbidden: User "u" cannot get path "/metrics"'),
    (
        res("list", "pods", ns="d"),
        "RBAC: x",
        'pods is forbidden: User "u" cannot list resource "pods" in API group "" '
        'in the namespace "d": RBAC: x',
    ),
]


@pytest.mark.parametrize(("attrs", "reason", "message"), MESSAGES)
def test_forbidden_message(attrs: Attributes, reason: str, message: str) -> None:
    assert forbidden_message(UserInfo("u"), attrs, reason) == message
