"""Volcano 1.15's queue allocation gate, added at pod creation to the pods that opt in."""

from __future__ import annotations

from typing import Any

import pytest

from shared.labels import QUEUE_ALLOCATION_GATE_KEY
from webhook.pod.mutation import gated_for_queue_allocation

GATE = {"name": QUEUE_ALLOCATION_GATE_KEY}
OTHER = {"name": "example.com/wait"}


def pod(annotation: str | None, gates: list[dict[str, str]] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p"}
    if annotation is not None:
        metadata["annotations"] = {QUEUE_ALLOCATION_GATE_KEY: annotation}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if gates is not None:
        spec["schedulingGates"] = gates
    return {"metadata": metadata, "spec": spec}


@pytest.mark.parametrize(
    ("given", "gates"),
    [
        pytest.param(pod("true"), [GATE], id="opted-in"),
        pytest.param(pod("true", [OTHER]), [OTHER, GATE], id="after-other-gates"),
        pytest.param(pod("true", [GATE]), [GATE], id="never-twice"),
        pytest.param(pod("false"), None, id="annotation-false"),
        pytest.param(pod(None), None, id="no-annotation"),
        pytest.param(pod(None, [OTHER]), [OTHER], id="others-untouched"),
    ],
)
def test_gated_for_queue_allocation(given: dict[str, Any], gates: list[Any] | None) -> None:
    assert gated_for_queue_allocation(given)["spec"].get("schedulingGates") == gates


def test_the_pod_given_is_not_changed() -> None:
    given = pod("true", [OTHER])
    gated_for_queue_allocation(given)
    assert given["spec"]["schedulingGates"] == [OTHER]
