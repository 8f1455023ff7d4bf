"""The RBAC objects every cluster starts with (kube-apiserver's bootstrap policy, the part a
client notices): `cluster-admin` for `system:masters`, discovery and health for everyone
authenticated, version and health for anonymous callers too, and self access reviews."""

from __future__ import annotations

from typing import Any

RBAC_API = "rbac.authorization.k8s.io/v1"
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
PUBLIC_INFO_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *PUBLIC_INFO_URLS]


def _metadata(name: str) -> dict[str, Any]:
    return {"name": name, "labels": dict(BOOTSTRAP_LABELS), "annotations": dict(AUTOUPDATE)}


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRole",
        "metadata": _metadata(name),
        "rules": rules,
    }


def _binding(name: str, *groups: str) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRoleBinding",
        "metadata": _metadata(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}
            for group in groups
        ],
    }


CLUSTER_ROLES = [
    _cluster_role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _cluster_role("system:discovery", [{"nonResourceURLs": DISCOVERY_URLS, "verbs": ["get"]}]),
    _cluster_role(
        "system:public-info-viewer", [{"nonResourceURLs": PUBLIC_INFO_URLS, "verbs": ["get"]}]
    ),
    _cluster_role(
        "system:basic-user",
        [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["selfsubjectreviews"],
                "verbs": ["create"],
            },
        ],
    ),
]

CLUSTER_ROLE_BINDINGS = [
    _binding("cluster-admin", "system:masters"),
    _binding("system:discovery", "system:authenticated"),
    _binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
    _binding("system:basic-user", "system:authenticated"),
]


KUBERNETES_SERVICE_IP = "10.96.0.1"  # recorded only: pods reach the API server on loopback


def kubernetes_service(port: int) -> dict[str, Any]:
    """The `kubernetes` Service in `default`, as kube-apiserver maintains it."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": KUBERNETES_SERVICE_IP,
            "clusterIPs": [KUBERNETES_SERVICE_IP],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        },
        "status": {"loadBalancer": {}},
    }


def kubernetes_endpoints(host: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": [
            {
                "addresses": [{"ip": host}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            }
        ],
    }


def kubernetes_endpoint_slice(host: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": "kubernetes"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [host], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }
