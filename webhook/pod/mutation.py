"""What `/pods/mutate` does, as Volcano's webhook manager: the queue allocation gate of pods
that opt in (only with the SchedulingGatesQueueAdmission feature gate on)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared import labels


def gated_for_queue_allocation(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod with Volcano's queue allocation gate added when it opts in (its annotation
    `scheduling.volcano.sh/queue-allocation-gate: "true"`) and lacks it; else the pod as given.
    Only with the SchedulingGatesQueueAdmission feature gate on."""
    metadata = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping) or (
        annotations.get(labels.QUEUE_ALLOCATION_GATE_KEY) != "true"
    ):
        return dict(pod)
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return dict(pod)
    gates = spec.get("schedulingGates")
    gates = list(gates) if isinstance(gates, list) else []
    if any(
        isinstance(g, Mapping) and g.get("name") == labels.QUEUE_ALLOCATION_GATE_KEY for g in gates
    ):
        return dict(pod)
    return {
        **pod,
        "spec": {**spec, "schedulingGates": [*gates, {"name": labels.QUEUE_ALLOCATION_GATE_KEY}]},
    }
