"""Where a webhook Service is reached, and the Endpoints/EndpointSlices of selected pods."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.apiserver.services import NoEndpointsError, resolve
from localcluster.controllers.endpoints import desired_endpoints, desired_slice, differs

SERVICE: dict[str, Any] = {
    "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid"},
    "spec": {
        "selector": {"app": "web"},
        "ports": [{"name": "https", "port": 443, "targetPort": "tls"}],
    },
}


def pod(name: str, ip: str, ready: bool, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"{name}-uid",
            "labels": {"app": "web"},
            **extra,
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [{"ports": [{"name": "tls", "containerPort": 9443}]}],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


PODS = [
    pod("a", "127.1.1.1", True),
    pod("b", "127.1.1.2", False),
    {
        **pod("other", "127.1.1.3", True),
        "metadata": {"name": "other", "namespace": "ns", "labels": {}},
    },
    {**pod("done", "127.1.1.4", True), "status": {"phase": "Succeeded", "podIP": "127.1.1.4"}},
]


def test_endpoints_split_ready_and_not_ready_at_the_named_target_port() -> None:
    endpoints = desired_endpoints(SERVICE, PODS)
    assert endpoints is not None
    (subset,) = endpoints["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["127.1.1.1"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["127.1.1.2"]
    assert subset["ports"] == [{"name": "https", "port": 9443, "protocol": "TCP"}]
    assert endpoints["metadata"]["ownerReferences"][0]["uid"] == "svc-uid"
    assert not differs(endpoints, endpoints)


def test_slice_conditions_and_labels() -> None:
    endpoint_slice = desired_slice(SERVICE, PODS)
    assert endpoint_slice is not None
    assert endpoint_slice["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    assert [e["conditions"]["ready"] for e in endpoint_slice["endpoints"]] == [True, False]


def test_selectorless_services_are_left_alone() -> None:
    plain = {"metadata": SERVICE["metadata"], "spec": {"ports": []}}
    assert desired_endpoints(plain, PODS) is None and desired_slice(plain, PODS) is None


@pytest.mark.parametrize(
    ("endpoints", "answer"),
    [
        (None, ("127.0.0.1", 443)),
        ({"subsets": []}, ("127.0.0.1", 443)),
        (
            {
                "subsets": [
                    {"addresses": [{"ip": "127.1.1.1"}], "ports": [{"name": "https", "port": 9443}]}
                ]
            },
            ("127.1.1.1", 9443),
        ),
    ],
)
def test_resolve(endpoints: dict[str, Any] | None, answer: tuple[str, int]) -> None:
    assert resolve(SERVICE, endpoints, 443) == answer


def test_resolve_without_a_ready_endpoint_fails_like_kube() -> None:
    only_not_ready = {
        "subsets": [{"notReadyAddresses": [{"ip": "127.1.1.2"}], "ports": [{"port": 9443}]}]
    }
    with pytest.raises(NoEndpointsError, match='no endpoints available for service "web"'):
        resolve(SERVICE, only_not_ready, 443)
