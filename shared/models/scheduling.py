"""scheduling.volcano.sh/v1beta1 PodGroup and Queue, field for field as in Volcano's CRDs."""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field

from shared import labels
from shared.models.base import KubeModel, KubeObject
from shared.models.job import LABEL_SELECTOR, RESOURCE_LIST, NetworkTopology

PODGROUP_PHASES: Final = ("Pending", "Running", "Unknown", "Inqueue", "Completed")
QUEUE_STATES: Final = ("Open", "Closed", "Closing", "Unknown")
DEQUEUE_STRATEGIES: Final = ("fifo", "traverse")
DNS_SUBDOMAIN_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class SubGroupPolicy(KubeModel):
    """One partitioned task of the gang: pods grouped by `matchLabelKeys`."""

    name: str | None = Field(default=None, max_length=253)
    """The name of the sub-group (a partitioned task)."""
    sub_group_size: int | None = Field(default=None, json_schema_extra={"default": 1, "minimum": 1})
    """The pods in each sub-group."""
    min_sub_groups: int | None = Field(default=None, json_schema_extra={"default": 0, "minimum": 0})
    """The sub-groups that must be schedulable for the gang to start."""
    label_selector: dict[str, Any] | None = Field(default=None, json_schema_extra=LABEL_SELECTOR)
    """Selects the pods of the sub-groups."""
    match_label_keys: list[str] | None = None
    """Pod label keys whose values split the selected pods into sub-groups."""
    network_topology: NetworkTopology | None = None
    """The network topology constraint of each sub-group."""


class PodGroupSpec(KubeModel):
    min_member: int | None = Field(default=None, ge=0)
    """The pods that must be schedulable together before any of them is bound: the gang size."""
    min_task_member: dict[str, int] | None = None
    """The gang size of each task, by task name."""
    queue: str | None = Field(
        default=None,
        max_length=253,
        json_schema_extra={"default": "default", "pattern": DNS_SUBDOMAIN_PATTERN},
    )
    """The Queue the group is scheduled from."""
    priority_class_name: str | None = Field(default=None, max_length=253)
    """The PriorityClass of the group, which orders it in its queue."""
    min_resources: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    """The resources the gang needs at least; the group is not admitted before they are free."""
    network_topology: NetworkTopology | None = None
    """The network topology constraint of the group (HyperNode tiers)."""
    sub_group_policy: list[SubGroupPolicy] | None = None
    """Partitioned tasks of the gang, each scheduled as sub-groups."""


class PodGroupCondition(KubeModel):
    type: str | None = None
    """The kind of condition: Unschedulable or Scheduled."""
    status: str | None = None
    """True, False or Unknown."""
    reason: str | None = None
    """Why, in one word."""
    message: str | None = None
    """Why, for people."""
    last_transition_time: str | None = Field(
        default=None, json_schema_extra={"format": "date-time"}
    )
    """When the condition last changed."""
    transition_id: str | None = Field(default=None, alias="transitionID")
    """The scheduling session that set the condition."""


class PodGroupStatus(KubeModel):
    phase: str | None = Field(default=None, json_schema_extra={"enum": list(PODGROUP_PHASES)})
    """Pending, Inqueue (admitted by its queue), Running, Unknown (fewer than minMember pods can
    run) or Completed."""
    conditions: list[PodGroupCondition] | None = None
    """Why the group is or is not scheduled."""
    running: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """Pods of the group that are running."""
    succeeded: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """Pods of the group that succeeded."""
    failed: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """Pods of the group that failed."""


class PodGroup(KubeObject):
    """A gang of pods the scheduler binds together or not at all."""

    api_version: str | None = labels.SCHEDULING_API_VERSION
    kind: str | None = labels.PODGROUP_KIND
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    """The gang: its size, queue and priority."""
    status: PodGroupStatus | None = None
    """The gang's phase and pod counts, written by the scheduler."""


class Guarantee(KubeModel):
    resource: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    """Resources reserved for the queue whatever the other queues use."""


class Cluster(KubeModel):
    name: str | None = None
    """The name of the cluster."""
    weight: int | None = None
    """The queue's weight in that cluster."""
    capacity: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    """The queue's capacity in that cluster."""


class NodeGroupTerms(KubeModel):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    """Node groups the queue's pods must (affinity) or must not (anti-affinity) run on."""
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None
    """Node groups the queue's pods should (affinity) or should not (anti-affinity) run on."""


class QueueAffinity(KubeModel):
    node_group_affinity: NodeGroupTerms | None = None
    """Node groups the queue's pods run on."""
    node_group_anti_affinity: NodeGroupTerms | None = None
    """Node groups the queue's pods avoid."""


class QueueSpec(KubeModel):
    weight: int | None = Field(
        default=None, ge=1, json_schema_extra={"default": 1, "maximum": 65535}
    )
    """The queue's share of the cluster relative to the other queues (1 by default)."""
    capability: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    """The most resources the queue's pods may use together."""
    deserved: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    """The resources the queue deserves: above them its pods may be reclaimed by other queues."""
    guarantee: Guarantee | None = None
    """Resources reserved for the queue."""
    reclaimable: bool | None = None
    """Whether other queues may reclaim resources the queue uses beyond its deserved share (true by
    default)."""
    extend_clusters: list[Cluster] | None = None
    """The queue's weight and capacity in other clusters."""
    affinity: QueueAffinity | None = None
    """Node groups the queue's pods run on or avoid."""
    type: str | None = Field(default=None, max_length=253)
    """The type of the queue, for schedulers that tell queue types apart."""
    parent: str | None = Field(
        default=None, max_length=253, json_schema_extra={"pattern": DNS_SUBDOMAIN_PATTERN}
    )
    """The parent queue in a hierarchy of queues (root when unset)."""
    priority: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """The queue's priority: higher-priority queues are served first."""
    dequeue_strategy: str | None = Field(
        default=None,
        json_schema_extra={"enum": list(DEQUEUE_STRATEGIES), "default": "traverse"},
    )
    """How PodGroups leave the queue: fifo (in order, the first one blocking the rest) or traverse
    (any that fits, the default)."""


class Reservation(KubeModel):
    nodes: list[str] | None = None
    """Nodes reserved for the queue."""
    resource: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    """Resources reserved for the queue."""


class QueueStatus(KubeModel):
    state: str | None = Field(default=None, json_schema_extra={"enum": list(QUEUE_STATES)})
    """Open (accepts PodGroups), Closing, Closed or Unknown."""
    unknown: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """PodGroups of the queue in phase Unknown."""
    pending: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """PodGroups of the queue in phase Pending."""
    running: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """PodGroups of the queue in phase Running."""
    inqueue: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """PodGroups of the queue in phase Inqueue."""
    completed: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """PodGroups of the queue in phase Completed."""
    reservation: Reservation | None = None
    """Nodes and resources reserved for the queue."""
    allocated: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    """The resources the queue's pods use."""


class Queue(KubeObject):
    """A share of the cluster that PodGroups are scheduled from."""

    api_version: str | None = labels.SCHEDULING_API_VERSION
    kind: str | None = labels.QUEUE_KIND
    spec: QueueSpec = Field(default_factory=QueueSpec)
    """The queue's share of the cluster: weight, capability, deserved and guaranteed resources."""
    status: QueueStatus | None = None
    """The queue's state and its PodGroups by phase."""

    @property
    def is_open(self) -> bool:
        """Open, or not yet given a state (no queue controller has acted: new queues start Open)."""
        state = self.status.state if self.status else None
        return state in (None, "", "Open")
