"""The `default` Queue the queue controller creates when it is missing, as Volcano's scheduler."""

from __future__ import annotations

import pytest

from controller.queues.decide import DefaultQueueSpec, default_queue


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (DefaultQueueSpec(), {"weight": 1, "reclaimable": True}),
        (DefaultQueueSpec(weight=3, reclaimable=False), {"weight": 3, "reclaimable": False}),
    ],
)
def test_default_queue(spec: DefaultQueueSpec, expected: dict[str, object]) -> None:
    queue = default_queue(spec)
    assert queue["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert queue["kind"] == "Queue"
    assert queue["metadata"] == {"name": "default"}
    assert queue["spec"] == expected
