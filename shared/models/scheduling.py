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
    sub_group_size: int | None = Field(default=None, json_schema_extra={"default": 1, "minimum": 1})
    min_sub_groups: int | None = Field(default=None, json_schema_extra={"default": 0, "minimum": 0})
    label_selector: dict[str, Any] | None = Field(default=None, json_schema_extra=LABEL_SELECTOR)
    match_label_keys: list[str] | None = None
    network_topology: NetworkTopology | None = None


class PodGroupSpec(KubeModel):
    min_member: int | None = Field(default=None, ge=0)
    min_task_member: dict[str, int] | None = None
    queue: str | None = Field(
        default=None,
        max_length=253,
        json_schema_extra={"default": "default", "pattern": DNS_SUBDOMAIN_PATTERN},
    )
    priority_class_name: str | None = Field(default=None, max_length=253)
    min_resources: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    network_topology: NetworkTopology | None = None
    sub_group_policy: list[SubGroupPolicy] | None = None


class PodGroupCondition(KubeModel):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = Field(
        default=None, json_schema_extra={"format": "date-time"}
    )
    transition_id: str | None = Field(default=None, alias="transitionID")


class PodGroupStatus(KubeModel):
    phase: str | None = Field(default=None, json_schema_extra={"enum": list(PODGROUP_PHASES)})
    conditions: list[PodGroupCondition] | None = None
    running: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    succeeded: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    failed: int | None = Field(default=None, json_schema_extra={"minimum": 0})


class PodGroup(KubeObject):
    api_version: str | None = labels.SCHEDULING_API_VERSION
    kind: str | None = labels.PODGROUP_KIND
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus | None = None


class Guarantee(KubeModel):
    resource: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)


class Cluster(KubeModel):
    name: str | None = None
    weight: int | None = None
    capacity: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)


class NodeGroupTerms(KubeModel):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None


class QueueAffinity(KubeModel):
    node_group_affinity: NodeGroupTerms | None = None
    node_group_anti_affinity: NodeGroupTerms | None = None


class QueueSpec(KubeModel):
    weight: int | None = Field(
        default=None, ge=1, json_schema_extra={"default": 1, "maximum": 65535}
    )
    capability: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    deserved: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)
    guarantee: Guarantee | None = None
    reclaimable: bool | None = None
    extend_clusters: list[Cluster] | None = None
    affinity: QueueAffinity | None = None
    type: str | None = Field(default=None, max_length=253)
    parent: str | None = Field(
        default=None, max_length=253, json_schema_extra={"pattern": DNS_SUBDOMAIN_PATTERN}
    )
    priority: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    dequeue_strategy: str | None = Field(
        default=None,
        json_schema_extra={"enum": list(DEQUEUE_STRATEGIES), "default": "traverse"},
    )


class Reservation(KubeModel):
    nodes: list[str] | None = None
    resource: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)


class QueueStatus(KubeModel):
    state: str | None = Field(default=None, json_schema_extra={"enum": list(QUEUE_STATES)})
    unknown: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    pending: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    running: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    inqueue: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    completed: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    reservation: Reservation | None = None
    allocated: dict[str, Any] | None = Field(default=None, json_schema_extra=RESOURCE_LIST)


class Queue(KubeObject):
    api_version: str | None = labels.SCHEDULING_API_VERSION
    kind: str | None = labels.QUEUE_KIND
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus | None = None

    @property
    def is_open(self) -> bool:
        """Open, or not yet given a state (no queue controller has acted: new queues start Open)."""
        state = self.status.state if self.status else None
        return state in (None, "", "Open")
