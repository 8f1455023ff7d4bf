"""`controller.elastic.decide.resources`: a pod spec's requests and limits, and how amounts read
in a decision's reason."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from controller.elastic.decide.resources import (
    describe,
    parse_amounts,
    pod_spec_amounts,
    shortfall,
    sum_amounts,
)

GPU = "nvidia.com/gpu"
D = Decimal


def container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Any:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources}


@pytest.mark.parametrize(
    ("spec", "primary", "expected"),
    [
        ({"containers": [container({"cpu": "500m"})]}, "requests", {"cpu": D("0.5")}),
        # a missing request is the limit (the API server's default), and the other way round
        ({"containers": [container(limits={"cpu": "2"})]}, "requests", {"cpu": D(2)}),
        ({"containers": [container({"cpu": "1"})]}, "limits", {"cpu": D(1)}),
        # containers add up; the largest init container counts if it is larger
        (
            {
                "containers": [container({"cpu": "1"}), container({"cpu": "1", "memory": "1Gi"})],
                "initContainers": [container({"cpu": "4"})],
            },
            "requests",
            {"cpu": D(4), "memory": D(2**30)},
        ),
        # the overhead comes on top
        (
            {"containers": [container({"cpu": "1"})], "overhead": {"cpu": "250m"}},
            "requests",
            {"cpu": D("1.25")},
        ),
        ({}, "requests", {}),
        ("not a spec", "requests", {}),
    ],
)
def test_pod_spec_amounts(spec: Any, primary: str, expected: dict[str, Decimal]) -> None:
    assert pod_spec_amounts(spec, primary) == expected


def test_parse_amounts_leaves_out_what_does_not_parse() -> None:
    assert parse_amounts({"cpu": "1", "memory": "lots"}) == {"cpu": D(1)}
    assert parse_amounts(None) == {}


@pytest.mark.parametrize(
    ("amounts", "text"),
    [
        ({GPU: D(1)}, "1 GPU"),
        ({GPU: D(2)}, "2 GPUs"),
        ({"cpu": D("1.5"), "memory": D(3 * 2**30)}, "1500m CPU and 3Gi memory"),
        ({"cpu": D(2)}, "2 CPU"),
        ({"memory": D(1000)}, "1000 memory"),
        ({}, ""),
    ],
)
def test_describe(amounts: dict[str, Decimal], text: str) -> None:
    assert describe(amounts, GPU) == text


def test_sum_and_shortfall() -> None:
    assert sum_amounts([{"cpu": D(1)}, {"cpu": D(2), "memory": D(5)}]) == {
        "cpu": D(3),
        "memory": D(5),
    }
    assert shortfall({"cpu": D(-2), "memory": D(4)}, ["cpu", "memory"]) == {"cpu": D(2)}
