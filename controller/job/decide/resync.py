"""When the periodic resync re-plans a Job.

Every watch event already brings its Job to a reconcile, and every plan that depends on time asks
for its own (`Plan.requeue_after`). What the resync adds is a second chance for a change no event
brought, so it re-plans a Job only when what its last reconcile saw has changed since: a Job
whose last reconcile was a fixpoint (it changed none of its own inputs and read nothing outside
the cache) and whose inputs are the same is skipped, up to `FULL_RESYNC_PERIODS` periods. Volcano's
controller has no periodic resync of Jobs at all; re-planning thousands of settled Jobs every
period saturated vcjob's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controller.job.decide.model import PlanSettings
from shared.wire import resource_version_of, status_of, uid_of

# A settled Job is re-planned at least this many resync periods apart all the same.
FULL_RESYNC_PERIODS: Final = 10

# (uid, resourceVersion) of each object a reconcile reads from the cache, one entry for the
# cluster-wide objects (PriorityClasses, ResourceFlavors) every Job reads, and one for what the
# Job's Queue says to it (its state: the Queue's counts change with every PodGroup).
Inputs = frozenset[tuple[str, str]]
CLUSTER_WIDE: Final = "cluster-wide"
QUEUE_ENTRY: Final = "queue"


@dataclass(frozen=True)
class Settled:
    """What a reconcile that changed nothing saw, and when it ran (monotonic seconds)."""

    inputs: Inputs
    settings: PlanSettings
    at: float


def inputs_of(
    objects: Iterable[Mapping[str, Any]],
    cluster_wide_generation: int,
    queue: tuple[str, Mapping[str, Any] | None] | None = None,
) -> Inputs:
    """The version of every object a reconcile of the Job reads; `queue`: its Queue's name and
    the Queue (None: it does not exist)."""
    seen = {(CLUSTER_WIDE, str(cluster_wide_generation))}
    if queue is not None:
        name, found = queue
        state = status_of(found).get("state") if found is not None else None
        seen.add((QUEUE_ENTRY, f"{name}={'missing' if found is None else state or ''}"))
    for obj in objects:
        seen.add((uid_of(obj), resource_version_of(obj)))
    return frozenset(seen)


def is_fixpoint(
    before: Inputs, after: Inputs, *, memory_kept: bool, read_outside: bool, edges_taken: bool
) -> bool:
    """A reconcile whose plan, applied, left its own inputs as it found them: planning the same
    inputs again would decide the same. Not so when it read the API (a PVC, a Queue), generated
    a key, consumed pod deletions or changed what it remembers."""
    return before == after and memory_kept and not read_outside and not edges_taken


def replans(
    settled: Settled | None, inputs: Inputs, settings: PlanSettings, now: float, period: float
) -> bool:
    """Whether the resync at `now` re-plans the Job."""
    if settled is None or settled.inputs != inputs or settled.settings != settings:
        return True
    return now - settled.at >= FULL_RESYNC_PERIODS * period
