"""Least privilege, checked against what really happened: from kube-apiserver's audit log
(`vcjob local up --audit-log`, audit.k8s.io/v1 Events, one JSON line each) and the RBAC objects a
chart renders, each ServiceAccount's grants that no request used, and the requests the API server
refused it.

A grant is one verb on one resource (with its subresource) of one API group, for one
`resourceNames` entry if the rule names any, in the scope of its binding (a namespace, or the
whole cluster for a ClusterRoleBinding); a request uses it when the rule allows the request and
the request falls in the scope.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


@dataclass(frozen=True)
class Attributes:
    """What one request asked, as RBAC rules match it."""

    verb: str
    path: str = ""
    resource_request: bool = False
    api_group: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def combined_resource(self) -> str:
        """`pods/log` when a subresource is asked for, as RBAC rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def rule_allows(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """Whether one RBAC PolicyRule allows the request, as kube-apiserver's RBAC matches it."""
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return any(
            url in ("*", attrs.path) or (url.endswith("*") and attrs.path.startswith(url[:-1]))
            for url in rule.get("nonResourceURLs") or []
        )
    groups = rule.get("apiGroups") or []
    resources = rule.get("resources") or []
    names = rule.get("resourceNames") or []
    return (
        ("*" in groups or attrs.api_group in groups)
        and any(
            r in ("*", attrs.combined_resource)
            or (bool(attrs.subresource) and r == f"*/{attrs.subresource}")
            for r in resources
        )
        and (not names or attrs.name in names)
    )


def audit_record(event: Mapping[str, Any]) -> dict[str, Any]:
    """One audit.k8s.io/v1 Event flattened to what the checks below read."""
    ref = event.get("objectRef") or {}
    user = event.get("impersonatedUser") or event.get("user") or {}
    received = str(event.get("requestReceivedTimestamp") or "")
    return {
        # ISO 8601 in UTC with microseconds, comparable as text with datetime.isoformat()'s.
        "timestamp": dt.datetime.fromisoformat(received).isoformat(timespec="microseconds")
        if received
        else "",
        "user": str(user.get("username", "")),
        "groups": list(user.get("groups") or []),
        "verb": str(event.get("verb", "")),
        "apiGroup": str(ref.get("apiGroup", "")),
        "resource": str(ref.get("resource", "")),
        "subresource": str(ref.get("subresource", "")),
        "namespace": str(ref.get("namespace", "")),
        "name": str(ref.get("name", "")),
        "path": str(event.get("requestURI", "")).split("?", 1)[0],
        "code": int((event.get("responseStatus") or {}).get("code", 0)),
    }


def read_audit_log(path: Path) -> list[dict[str, Any]]:
    """The requests of kube-apiserver's JSON audit log, one record each (final stage only)."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("stage") in (None, "ResponseComplete", "Panic"):
            records.append(audit_record(event))
    return records


@dataclass(frozen=True)
class Grant:
    user: str
    verb: str
    group: str
    resource: str  # `pods` or `jobs/status`
    name: str  # "" unless the rule lists resourceNames
    namespace: str  # "" for a ClusterRoleBinding: every namespace and the cluster scope
    source: str  # the Role or ClusterRole that grants it

    def describe(self) -> str:
        scope = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        group = self.group or "core"
        named = f" named {self.name}" if self.name else ""
        return f"{self.verb} {self.resource} ({group}){named} {scope}, from {self.source}"

    def rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {
            "verbs": [self.verb],
            "apiGroups": [self.group],
            "resources": [self.resource],
        }
        if self.name:
            rule["resourceNames"] = [self.name]
        return rule


def record_attributes(record: Mapping[str, Any]) -> Attributes:
    return Attributes(
        verb=str(record.get("verb", "")),
        path=str(record.get("path", "")),
        resource_request=bool(record.get("resource")),
        api_group=str(record.get("apiGroup", "")),
        namespace=str(record.get("namespace", "")),
        resource=str(record.get("resource", "")),
        subresource=str(record.get("subresource", "")),
        name=str(record.get("name", "")),
    )


def chart_grants(documents: Iterable[Mapping[str, Any]]) -> list[Grant]:
    """Every grant the rendered Roles, ClusterRoles and bindings give to ServiceAccounts."""
    docs = list(documents)
    roles = {
        (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
        for d in docs
        if d.get("kind") in ("Role", "ClusterRole")
    }
    grants: list[Grant] = []
    for binding in docs:
        if binding.get("kind") not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        namespace = (
            binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else ""
        )
        ref = binding["roleRef"]
        role_namespace = namespace if ref["kind"] == "Role" else ""
        role = roles.get((ref["kind"], role_namespace, ref["name"]))
        if role is None:
            continue
        for subject in binding.get("subjects") or []:
            if subject.get("kind") != "ServiceAccount":
                continue
            user = service_account_username(subject.get("namespace") or namespace, subject["name"])
            for rule in role.get("rules") or []:
                for group in rule.get("apiGroups") or []:
                    for resource in rule.get("resources") or []:
                        for verb in rule.get("verbs") or []:
                            for name in rule.get("resourceNames") or [""]:
                                grants.append(
                                    Grant(
                                        user,
                                        verb,
                                        group,
                                        resource,
                                        name,
                                        namespace,
                                        f"{role['kind']} {ref['name']}",
                                    )
                                )
    return grants


def used(grant: Grant, records: Sequence[Mapping[str, Any]]) -> bool:
    rule = grant.rule()
    for record in records:
        if record.get("user") != grant.user or int(record.get("code", 0)) == 403:
            continue
        attrs = record_attributes(record)
        if grant.namespace and attrs.namespace != grant.namespace:
            continue
        if rule_allows(rule, attrs):
            return True
    return False


def unused_grants(grants: Sequence[Grant], records: Sequence[Mapping[str, Any]]) -> list[Grant]:
    return [g for g in grants if not used(g, records)]


def refused(records: Sequence[Mapping[str, Any]], users: Iterable[str]) -> list[Mapping[str, Any]]:
    wanted = set(users)
    return [r for r in records if r.get("user") in wanted and int(r.get("code", 0)) == 403]
