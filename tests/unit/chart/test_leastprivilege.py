"""Grants from rendered RBAC objects, compared with an audit log."""

from __future__ import annotations

from typing import Any

from localcluster.leastprivilege import Grant, chart_grants, refused, unused_grants

SA = "system:serviceaccount:ns:ctl"
DOCS: list[dict[str, Any]] = [
    {
        "kind": "ClusterRole",
        "metadata": {"name": "ctl"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["list", "delete"]}
        ],
    },
    {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "ctl"},
        "roleRef": {"kind": "ClusterRole", "name": "ctl"},
        "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "ns"}],
    },
    {
        "kind": "Role",
        "metadata": {"name": "lease", "namespace": "ns"},
        "rules": [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": ["l"],
                "verbs": ["get"],
            }
        ],
    },
    {
        "kind": "RoleBinding",
        "metadata": {"name": "lease", "namespace": "ns"},
        "roleRef": {"kind": "Role", "name": "lease"},
        "subjects": [{"kind": "ServiceAccount", "name": "ctl"}],
    },
]


def record(
    verb: str,
    resource: str,
    *,
    group: str = "",
    ns: str = "",
    name: str = "",
    sub: str = "",
    code: int = 200,
) -> dict[str, Any]:
    return {
        "user": SA,
        "verb": verb,
        "apiGroup": group,
        "resource": resource,
        "subresource": sub,
        "namespace": ns,
        "name": name,
        "code": code,
    }


def test_grants_are_expanded_per_verb_resource_and_name() -> None:
    grants = chart_grants(DOCS)
    assert Grant(SA, "list", "", "pods", "", "", "ClusterRole ctl") in grants
    assert Grant(SA, "get", "coordination.k8s.io", "leases", "l", "ns", "Role lease") in grants
    assert len(grants) == 5


def test_unused_and_refused() -> None:
    records = [
        record("list", "pods"),
        record("delete", "pods", ns="x", name="p"),
        record("get", "leases", group="coordination.k8s.io", ns="other", name="l"),
        record("get", "secrets", ns="ns", name="s", code=403),
    ]
    unused = {(g.verb, g.resource) for g in unused_grants(chart_grants(DOCS), records)}
    # pods/status is never used; the lease grant is namespaced and was used elsewhere only.
    assert unused == {("list", "pods/status"), ("delete", "pods/status"), ("get", "leases")}
    assert [r["resource"] for r in refused(records, [SA])] == ["secrets"]
