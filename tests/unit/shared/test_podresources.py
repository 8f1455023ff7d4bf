"""A pod's aggregate container requests, as Kubernetes adds them up (sidecars included)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from shared.podresources import (
    aggregate_container_limits,
    aggregate_container_requests,
    pod_requests,
    supported_at_pod_level,
)


def box(cpu: str | None = None, limit: str | None = None, **fields: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if cpu is not None:
        resources["requests"] = {"cpu": cpu}
    if limit is not None:
        resources["limits"] = {"cpu": limit}
    return {"name": "c", "image": "busybox", "resources": resources, **fields}


@pytest.mark.parametrize(
    ("spec", "cpu"),
    [
        pytest.param({"containers": [box("1"), box("500m")]}, "1.5", id="containers-add-up"),
        pytest.param({"containers": [box(limit="2")]}, "2", id="a-limit-alone-is-the-request"),
        pytest.param(
            {"containers": [box("1")], "initContainers": [box("3")]}, "3", id="init-the-largest"
        ),
        pytest.param(
            {"containers": [box("1")], "initContainers": [box("500m")]}, "1", id="init-smaller"
        ),
        pytest.param(
            {"containers": [box("1")], "initContainers": [box("1", restartPolicy="Always")]},
            "2",
            id="sidecar-adds",
        ),
        pytest.param(
            {
                "containers": [box("1")],
                "initContainers": [box("1", restartPolicy="Always"), box("2500m")],
            },
            "3.5",
            id="init-after-a-sidecar-runs-beside-it",
        ),
        pytest.param({"containers": [box()]}, None, id="nothing-requested"),
    ],
)
def test_aggregate_container_requests(spec: dict[str, Any], cpu: str | None) -> None:
    assert aggregate_container_requests(spec).get("cpu") == (None if cpu is None else Decimal(cpu))


@pytest.mark.parametrize(
    ("spec", "cpu"),
    [
        pytest.param({"containers": [box(limit="1"), box(limit="2")]}, "3", id="limits-add-up"),
        pytest.param({"containers": [box("1")]}, None, id="a-request-is-no-limit"),
        pytest.param(
            {"containers": [box(limit="1")], "initContainers": [box(limit="4")]},
            "4",
            id="init-the-largest",
        ),
        pytest.param(
            {
                "containers": [box(limit="1")],
                "initContainers": [box(limit="1", restartPolicy="Always")],
            },
            "2",
            id="sidecar-adds",
        ),
    ],
)
def test_aggregate_container_limits(spec: dict[str, Any], cpu: str | None) -> None:
    assert aggregate_container_limits(spec).get("cpu") == (None if cpu is None else Decimal(cpu))


@pytest.mark.parametrize(
    ("name", "supported"),
    [("cpu", True), ("memory", True), ("hugepages-2Mi", True), ("nvidia.com/gpu", False)],
)
def test_supported_at_pod_level(name: str, supported: bool) -> None:
    assert supported_at_pod_level(name) is supported


@pytest.mark.parametrize(
    ("pod_level", "expected"),
    [
        pytest.param(None, {"cpu": "1", "memory": "64"}, id="containers"),
        pytest.param({"requests": {"cpu": "2"}}, {"cpu": "2", "memory": "64"}, id="pod-cpu"),
        pytest.param(
            {"limits": {"memory": "128"}}, {"cpu": "1", "memory": "128"}, id="limit-alone"
        ),
        pytest.param(
            {"requests": {"memory": "100"}, "limits": {"memory": "128"}},
            {"cpu": "1", "memory": "100"},
            id="request-before-limit",
        ),
        pytest.param(
            {"requests": {"example.com/gpu": "1"}}, {"cpu": "1", "memory": "64"}, id="unsupported"
        ),
    ],
)
def test_pod_requests(pod_level: dict[str, Any] | None, expected: dict[str, str]) -> None:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "64"}}}]
    }
    if pod_level is not None:
        spec["resources"] = pod_level
    assert pod_requests(spec) == {k: Decimal(v) for k, v in expected.items()}
