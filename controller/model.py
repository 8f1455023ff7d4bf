"""The contract between the controller's pure planner and its I/O shell.

The shell observes (job, its pods and child objects, edge events seen on the watches, the
planner's own memory) into an `Observed`; `controller.plan.reconcile(observed, settings)` returns a
`Plan`; the shell applies the plan's object operations, then writes the status once, then records
the events, then stores `plan.memory` for the next round. Objects are plain wire dicts
(camelCase), never client models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

WireObject = dict[str, Any]


@dataclass(frozen=True)
class ObjectRef:
    """An object to delete (or annotate): the API coordinates plus an optional UID precondition."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str | None = None


@dataclass(frozen=True)
class PodEdge:
    """Something the watch saw happen to a pod that the pod's current state no longer shows.

    `deleted`: the pod disappeared; `by_controller` is True when it carried the out-of-sync
    annotation (so it was deleted by us and must not raise PodEvicted).
    """

    kind: Literal["deleted"]
    pod: WireObject
    by_controller: bool


@dataclass(frozen=True)
class Observed:
    """Everything a reconcile of one job may look at. `now` is the only clock the planner sees."""

    job: WireObject
    pods: list[WireObject]
    now: datetime
    pod_group: WireObject | None = None
    commands: list[WireObject] = field(default_factory=list)
    # Plugin and volume children that exist now, by (kind, name): Service, ConfigMap, Secret,
    # NetworkPolicy, PersistentVolumeClaim. A name absent from the map was not found.
    children: dict[tuple[str, str], WireObject] = field(default_factory=dict)
    # PVC names the job references that were looked up and do not exist.
    missing_pvcs: frozenset[str] = frozenset()
    pod_edges: list[PodEdge] = field(default_factory=list)
    # Whatever the planner returned as `Plan.memory` last time for this job (None after a restart).
    memory: dict[str, Any] | None = None
    # PriorityClass values by name, for ordering tasks when summing minResources.
    priority_values: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanSettings:
    gang_schedulers: frozenset[str] = frozenset({"volcano"})
    disable_network_policy: bool = False
    ssh_key_type: Literal["rsa", "ed25519"] = "rsa"


@dataclass(frozen=True)
class EventRecord:
    """A Kubernetes Event to record on the job after the status write succeeded."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass
class Plan:
    """What to do, in order: annotate → delete → create → update → spec patch → status → events."""

    # Pods (or other children) to mark `volcano.sh/controller-out-of-sync: "true"` before deleting.
    annotate_out_of_sync: list[ObjectRef] = field(default_factory=list)
    delete: list[ObjectRef] = field(default_factory=list)
    # Full wire objects to create (PodGroup, PVCs, plugin objects, then pods), in this order.
    create: list[WireObject] = field(default_factory=list)
    # Full wire objects whose desired state differs from what exists (replace by name).
    update: list[WireObject] = field(default_factory=list)
    # A JSON merge patch for the job's main resource (e.g. a generated PVC name written back).
    job_spec_patch: dict[str, Any] | None = None
    # The complete new `status`, or None when it is unchanged.
    status: WireObject | None = None
    events: list[EventRecord] = field(default_factory=list)
    # Commands (by name) that were consumed and must be deleted.
    delete_commands: list[str] = field(default_factory=list)
    # Delete the job itself (TTL expired): Foreground, with a UID precondition.
    delete_job: bool = False
    # Reconcile again after this long even if nothing changes (timers, TTL, PVC re-check).
    requeue_after: timedelta | None = None
    # Opaque per-job state handed back in the next `Observed.memory` (timers, seen generation).
    memory: dict[str, Any] = field(default_factory=dict)
    # Pods may be created only when the job still exists with this UID and no deletionTimestamp.
    guard_uid: str | None = None
