"""RBAC authorization as kube-apiserver decides it, over a snapshot of roles and bindings.

Pure: the caller hands in the Roles, ClusterRoles and bindings (`Policy`), and gets back whether
a user may do what `Attributes` describe, with kube's reason text. `system:masters` may do
anything, as kube-apiserver's privileged-group authorizer allows before RBAC is asked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from localcluster.apiserver.requestinfo import Attributes
from localcluster.apiserver.users import MASTERS, UserInfo, service_account_username
from shared import selectors

RBAC_GROUP = "rbac.authorization.k8s.io"
Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Policy:
    cluster_roles: Mapping[str, Obj] = field(default_factory=dict)
    roles: Mapping[tuple[str, str], Obj] = field(default_factory=dict)  # (namespace, name)
    cluster_role_bindings: Sequence[Obj] = ()
    role_bindings: Sequence[Obj] = ()


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class Grant:
    """One binding's rules as they reach one user."""

    binding: str  # as kube describes it: `ClusterRoleBinding "x" of ClusterRole "y" to User "z"`
    rules: tuple[Obj, ...]


# -- rule matching ---------------------------------------------------------------------------


def verb_matches(rule: Obj, verb: str) -> bool:
    verbs = rule.get("verbs") or []
    return "*" in verbs or verb in verbs


def api_group_matches(rule: Obj, group: str) -> bool:
    groups = rule.get("apiGroups") or []
    return "*" in groups or group in groups


def resource_matches(rule: Obj, combined: str, subresource: str) -> bool:
    for resource in rule.get("resources") or []:
        if resource in ("*", combined):
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: Obj, name: str) -> bool:
    names = rule.get("resourceNames") or []
    return not names or name in names


def non_resource_url_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or []:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(rule: Obj, attrs: Attributes) -> bool:
    if not verb_matches(rule, attrs.verb):
        return False
    if attrs.resource_request:
        return (
            api_group_matches(rule, attrs.api_group)
            and resource_matches(rule, attrs.combined_resource, attrs.subresource)
            and resource_name_matches(rule, attrs.name)
        )
    return non_resource_url_matches(rule, attrs.path)


# -- subjects and roles ----------------------------------------------------------------------


def subject_applies(subject: Obj, user: UserInfo, binding_namespace: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return bool(name) and name == user.name
    if kind == "Group":
        return bool(name) and name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == service_account_username(namespace, name)
    return False


def describe_subject(subject: Obj, binding_namespace: str) -> str:
    name = subject.get("name", "")
    if subject.get("kind") == "ServiceAccount":
        name = f"{name}/{subject.get('namespace') or binding_namespace}"
    return f'{subject.get("kind")} "{name}"'


def cluster_role_rules(role: Obj, cluster_roles: Mapping[str, Obj]) -> tuple[Obj, ...]:
    """A ClusterRole's rules; an aggregated one's are its own plus every selected role's."""
    rules = list(role.get("rules") or [])
    aggregation = role.get("aggregationRule") or {}
    for spec in aggregation.get("clusterRoleSelectors") or []:
        selector = selectors.from_label_selector(spec)
        for other in cluster_roles.values():
            if other is role or other.get("aggregationRule"):
                continue
            labels = (other.get("metadata") or {}).get("labels") or {}
            if selectors.matches(selector, labels):
                rules.extend(r for r in other.get("rules") or [] if r not in rules)
    return tuple(rules)


def _role_for(
    ref: Obj, binding_namespace: str, policy: Policy
) -> tuple[tuple[Obj, ...] | None, str]:
    """(rules, error); rules is None when the referenced role does not exist."""
    kind, name = ref.get("kind", ""), ref.get("name", "")
    if kind == "ClusterRole":
        role = policy.cluster_roles.get(name)
        if role is None:
            return None, f'clusterrole.{RBAC_GROUP} "{name}" not found'
        return cluster_role_rules(role, policy.cluster_roles), ""
    if kind == "Role" and binding_namespace:
        found = policy.roles.get((binding_namespace, name))
        if found is None:
            return None, f'role.{RBAC_GROUP} "{name}" not found'
        return tuple(found.get("rules") or []), ""
    return None, f'unknown role kind "{kind}"'


def grants(user: UserInfo, namespace: str, policy: Policy) -> Iterator[Grant | str]:
    """Every binding that reaches `user` for a request in `namespace` ("" for cluster scope):
    a Grant, or an error text when the binding's role is missing."""
    for binding in policy.cluster_role_bindings:
        yield from _binding_grants(binding, "", user, policy)
    if namespace:
        for binding in policy.role_bindings:
            if (binding.get("metadata") or {}).get("namespace") == namespace:
                yield from _binding_grants(binding, namespace, user, policy)


def _binding_grants(
    binding: Obj, namespace: str, user: UserInfo, policy: Policy
) -> Iterator[Grant | str]:
    subject = next(
        (s for s in binding.get("subjects") or [] if subject_applies(s, user, namespace)), None
    )
    if subject is None:
        return
    ref = binding.get("roleRef") or {}
    rules, error = _role_for(ref, namespace, policy)
    if rules is None:
        yield error
        return
    name = (binding.get("metadata") or {}).get("name", "")
    if namespace:
        label = f'RoleBinding "{name}/{namespace}"'
    else:
        label = f'ClusterRoleBinding "{name}"'
    role = f'{ref.get("kind")} "{ref.get("name")}"'
    yield Grant(f"{label} of {role} to {describe_subject(subject, namespace)}", rules)


# -- decisions -------------------------------------------------------------------------------


def authorize(user: UserInfo, attrs: Attributes, policy: Policy) -> Decision:
    if MASTERS in user.groups:
        return Decision(True, "")
    problems: list[str] = []
    for grant in grants(user, attrs.namespace, policy):
        if isinstance(grant, str):
            problems.append(grant)
            continue
        if any(rule_allows(rule, attrs) for rule in grant.rules):
            return Decision(True, f"RBAC: allowed by {grant.binding}")
    if not problems:
        return Decision(False, "")
    joined = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
    return Decision(False, f"RBAC: {joined}")


def rules_for(user: UserInfo, namespace: str, policy: Policy) -> tuple[list[Obj], list[Obj], bool]:
    """(resourceRules, nonResourceRules, incomplete) for a SelfSubjectRulesReview."""
    if MASTERS in user.groups:
        return (
            [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            False,
        )
    resource_rules: list[Obj] = []
    non_resource_rules: list[Obj] = []
    incomplete = False
    for grant in grants(user, namespace, policy):
        if isinstance(grant, str):
            incomplete = True
            continue
        for rule in grant.rules:
            if rule.get("nonResourceURLs"):
                entry = {
                    "verbs": rule.get("verbs") or [],
                    "nonResourceURLs": rule["nonResourceURLs"],
                }
                if entry not in non_resource_rules:
                    non_resource_rules.append(entry)
            elif rule.get("resources"):
                kept = {
                    k: rule[k]
                    for k in ("verbs", "apiGroups", "resources", "resourceNames")
                    if rule.get(k)
                }
                if kept not in resource_rules:
                    resource_rules.append(kept)
    return resource_rules, non_resource_rules, incomplete


def forbidden_message(user: UserInfo, attrs: Attributes, reason: str) -> str:
    """kube-apiserver's 403 text, e.g. `pods is forbidden: User "u" cannot list resource "pods"
    in API group "" in the namespace "default"`."""
    if not attrs.resource_request:
        detail = f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        detail = (
            f'User "{user.name}" cannot {attrs.verb} resource "{attrs.combined_resource}" '
            f'in API group "{attrs.api_group}"'
        )
        if attrs.namespace:
            detail += f' in the namespace "{attrs.namespace}"'
        else:
            detail += " at the cluster scope"
    if reason:
        detail = f"{detail}: {reason}"
    if not attrs.resource_request or not attrs.resource:
        return f"forbidden: {detail}"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    if attrs.name:
        return f'{qualified} "{attrs.name}" is forbidden: {detail}'
    return f"{qualified} is forbidden: {detail}"
