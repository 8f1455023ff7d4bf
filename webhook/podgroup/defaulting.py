"""Volcano's default for a PodGroup on CREATE (`/podgroups/mutate`): the queue from the
namespace's `scheduling.volcano.sh/queue-name` annotation."""

from __future__ import annotations

import copy
from typing import Any, Final

DEFAULT_QUEUE: Final = "default"


def default_podgroup_queue(podgroup: dict[str, Any], namespace_queue: str | None) -> dict[str, Any]:
    """The PodGroup with `spec.queue` taken from its namespace's queue annotation, when the group
    names no queue or `default` (as in Volcano; the CRD defaults an absent queue to `default`)."""
    out = copy.deepcopy(podgroup)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        spec = out["spec"] = {}
    if namespace_queue and spec.get("queue") in (None, "", DEFAULT_QUEUE):
        spec["queue"] = namespace_queue
    return out
