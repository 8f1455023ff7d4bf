"""Which watched changes bring their job's next pass at once, and which may wait for the rest
of their burst (`WorkQueue.add_batched`).

A gang's pods are bound and started one by one, and its PodGroup's status is rewritten as they
are: reconciling the job for each of those changes is most of the controller's work on a busy
cluster, and every pass after the first in a burst finds what the first one did. What opens a
gate is handled at once: a PodGroup's new phase (Inqueue lets the pods be created) and any
change to the Job itself or to the other children.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shared.wire import status_of

# The cache's names of the two kinds (`controller.job.shell.cache.POD`, `.PODGROUP`).
POD: Final = "Pod"
PODGROUP: Final = "PodGroup"


def reacts_at_once(kind: str, before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> bool:
    """Whether the change of one watched object from `before` (None: not held) to `after`
    brings its job's next pass at once."""
    if kind == POD:
        return False
    if kind == PODGROUP:
        return before is None or _phase(before) != _phase(after)
    return True


def _phase(pod_group: Mapping[str, Any]) -> object:
    return status_of(pod_group).get("phase")
