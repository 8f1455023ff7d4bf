"""Which watched changes bring their job's next pass at once (controller.job.decide.urgency)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.decide import urgency
from controller.job.shell import cache


def pod_group(phase: str | None, running: int = 0) -> dict[str, Any]:
    status: dict[str, Any] = {"running": running}
    if phase is not None:
        status["phase"] = phase
    return {"metadata": {"name": "j-pg", "namespace": "ns"}, "status": status}


def pod(phase: str, node: str | None = None) -> dict[str, Any]:
    spec = {"nodeName": node} if node else {}
    return {
        "metadata": {"name": "j-w-0", "namespace": "ns"},
        "spec": spec,
        "status": {"phase": phase},
    }


@pytest.mark.parametrize(
    ("kind", "before", "after", "at_once"),
    [
        pytest.param("Pod", None, pod("Pending"), False, id="a pod seen for the first time"),
        pytest.param("Pod", pod("Pending"), pod("Pending", "node-1"), False, id="a pod bound"),
        pytest.param("Pod", pod("Running"), pod("Failed"), False, id="a pod failed"),
        pytest.param("PodGroup", None, pod_group("Pending"), True, id="a PodGroup created"),
        pytest.param("PodGroup", pod_group("Pending"), pod_group("Inqueue"), True,
                     id="admitted: the pods may be created"),
        pytest.param("PodGroup", pod_group(None), pod_group("Pending"), True,
                     id="its first phase"),
        pytest.param("PodGroup", pod_group("Inqueue"), pod_group("Running", 5), True,
                     id="Running"),
        pytest.param("PodGroup", pod_group("Running", 3), pod_group("Running", 5), False,
                     id="the same phase, new counts"),
        pytest.param("Job", {"spec": {}}, {"spec": {"minAvailable": 2}}, True, id="the Job"),
        pytest.param("Command", None, {"action": "AbortJob"}, True, id="a Command"),
        pytest.param("ConfigMap", {"data": {}}, {"data": {"a": "b"}}, True, id="a plugin object"),
    ],
)  # fmt: skip
def test_reacts_at_once(
    kind: str, before: dict[str, Any] | None, after: dict[str, Any], at_once: bool
) -> None:
    assert urgency.reacts_at_once(kind, before, after) is at_once


def test_the_kind_names_are_the_caches() -> None:
    assert (urgency.POD, urgency.PODGROUP) == (cache.POD, cache.PODGROUP)
