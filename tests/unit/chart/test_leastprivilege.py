"""Grants from rendered RBAC objects, compared with an audit log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.leastprivilege import (
    Grant,
    chart_grants,
    read_audit_log,
    refused,
    unused_grants,
)

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


def test_audit_events_of_kube_apiserver_are_read_as_records(tmp_path: Path) -> None:
    job = "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j/status"
    events = [
        {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "stage": "ResponseStarted",
         "verb": "watch", "requestURI": "/api/v1/pods?watch=1", "user": {"username": "x"},
         "objectRef": {"resource": "pods"}, "requestReceivedTimestamp": "2026-01-01T00:00:00.5Z"},
        {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "stage": "ResponseComplete",
         "verb": "create", "requestURI": f"{job}?x=1",
         "user": {"username": "system:serviceaccount:ns:sa", "groups": ["g"]},
         "objectRef": {"resource": "jobs", "namespace": "ns", "name": "j",
                       "apiGroup": "batch.volcano.sh", "subresource": "status"},
         "responseStatus": {"code": 403},
         "requestReceivedTimestamp": "2026-01-01T00:00:01.000002Z"},
    ]  # fmt: skip
    log = tmp_path / "audit.log"
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    records = read_audit_log(log)
    assert records == [
        {
            "timestamp": "2026-01-01T00:00:01.000002+00:00",
            "user": "system:serviceaccount:ns:sa",
            "groups": ["g"],
            "verb": "create",
            "apiGroup": "batch.volcano.sh",
            "resource": "jobs",
            "subresource": "status",
            "namespace": "ns",
            "name": "j",
            "path": job,
            "code": 403,
        }
    ]
    assert refused(records, ["system:serviceaccount:ns:sa"]) == records
