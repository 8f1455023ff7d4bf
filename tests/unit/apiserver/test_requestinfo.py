"""Request attributes as kube-apiserver's RequestInfoFactory reads them from method and path."""

from __future__ import annotations

import pytest

from localcluster.apiserver.requestinfo import Attributes, request_attributes

CASES = [
    ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "", "ns", "pods", "", "")),
    ("GET", "/api/v1/namespaces/ns/pods", {"watch": "true"}, ("watch", "", "ns", "pods", "", "")),
    ("GET", "/api/v1/watch/namespaces/ns/pods", {}, ("watch", "", "ns", "pods", "", "")),
    ("GET", "/api/v1/namespaces/ns/pods/p", {}, ("get", "", "ns", "pods", "", "p")),
    ("GET", "/api/v1/namespaces/ns/pods/p/log", {}, ("get", "", "ns", "pods", "log", "p")),
    ("POST", "/api/v1/namespaces/ns/pods", {}, ("create", "", "ns", "pods", "", "")),
    (
        "PUT",
        "/apis/apps/v1/namespaces/ns/deployments/d/status",
        {},
        ("update", "apps", "ns", "deployments", "status", "d"),
    ),
    (
        "PATCH",
        "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
        {},
        ("patch", "coordination.k8s.io", "ns", "leases", "", "l"),
    ),
    ("DELETE", "/api/v1/namespaces/ns/pods/p", {}, ("delete", "", "ns", "pods", "", "p")),
    ("DELETE", "/api/v1/namespaces/ns/pods", {}, ("deletecollection", "", "ns", "pods", "", "")),
    ("GET", "/api/v1/nodes", {}, ("list", "", "", "nodes", "", "")),
    ("GET", "/api/v1/namespaces/ns", {}, ("get", "", "ns", "namespaces", "", "ns")),
    (
        "PUT",
        "/api/v1/namespaces/ns/finalize",
        {},
        ("update", "", "ns", "namespaces", "finalize", "ns"),
    ),
    (
        "GET",
        "/api/v1/namespaces/ns/secrets",
        {"fieldSelector": "metadata.name=s"},
        ("list", "", "ns", "secrets", "", "s"),
    ),
    (
        "GET",
        "/api/v1/namespaces/ns/secrets",
        {"fieldSelector": "metadata.name!=s"},
        ("list", "", "ns", "secrets", "", ""),
    ),
    (
        "POST",
        "/api/v1/namespaces/ns/serviceaccounts/sa/token",
        {},
        ("create", "", "ns", "serviceaccounts", "token", "sa"),
    ),
]


@pytest.mark.parametrize(("method", "path", "query", "expected"), CASES)
def test_resource_requests(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    attrs = request_attributes(method, path, query)
    assert attrs.resource_request
    got = (
        attrs.verb,
        attrs.api_group,
        attrs.namespace,
        attrs.resource,
        attrs.subresource,
        attrs.name,
    )
    assert got == expected


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/healthz", "get"),
        ("GET", "/version", "get"),
        ("GET", "/api", "get"),
        ("GET", "/api/v1", "get"),
        ("GET", "/apis/apps/v1", "get"),
        ("POST", "/logs", "post"),
    ],
)
def test_non_resource_requests(method: str, path: str, verb: str) -> None:
    assert request_attributes(method, path, {}) == Attributes(verb=verb, path=path)
