"""Volcano's defaults for a Queue on CREATE (`/queues/mutate`)."""

from __future__ import annotations

import copy
from typing import Any, Final

from webhook.queue.hierarchy import HIERARCHY, HIERARCHY_WEIGHTS

DEFAULT_WEIGHT: Final = 1


def default_queue(queue: dict[str, Any]) -> dict[str, Any]:
    """The queue with Volcano's defaults: `weight: 1` and `reclaimable: true` when absent, and a
    hierarchy (with its weights) that does not start at `root` put under it (`root/`, `1/`)."""
    out = copy.deepcopy(queue)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        spec = out["spec"] = {}
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    if spec.get("weight") in (None, 0):
        spec["weight"] = DEFAULT_WEIGHT
    metadata = out.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if isinstance(annotations, dict):
        hierarchy = annotations.get(HIERARCHY)
        weights = annotations.get(HIERARCHY_WEIGHTS)
        if (
            isinstance(hierarchy, str)
            and isinstance(weights, str)
            and hierarchy
            and weights
            and not hierarchy.startswith("root")
        ):
            annotations[HIERARCHY] = f"root/{hierarchy}"
            annotations[HIERARCHY_WEIGHTS] = f"1/{weights}"
    return out
