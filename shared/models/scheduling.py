"""scheduling.volcano.sh/v1beta1 PodGroup and Queue."""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field

from shared import labels
from shared.models.base import KubeModel, KubeObject

PODGROUP_PHASES: Final = ("Pending", "Running", "Unknown", "Inqueue", "Completed")
QUEUE_STATES: Final = ("Open", "Closed", "Closing", "Unknown")


class PodGroupSpec(KubeModel):
    min_member: int | None = Field(default=None, ge=0)
    min_task_member: dict[str, int] | None = None
    queue: str | None = None
    priority_class_name: str | None = None
    min_resources: dict[str, Any] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )


class PodGroupCondition(KubeModel):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")


class PodGroupStatus(KubeModel):
    phase: str | None = Field(default=None, json_schema_extra={"enum": list(PODGROUP_PHASES)})
    conditions: list[PodGroupCondition] | None = None
    running: int | None = None
    succeeded: int | None = None
    failed: int | None = None


class PodGroup(KubeObject):
    api_version: str | None = labels.SCHEDULING_API_VERSION
    kind: str | None = labels.PODGROUP_KIND
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus | None = None


class QueueSpec(KubeModel):
    weight: int | None = Field(default=None, ge=1)
    capability: dict[str, Any] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )
    reclaimable: bool | None = None
    parent: str | None = None


class QueueStatus(KubeModel):
    state: str | None = Field(default=None, json_schema_extra={"enum": list(QUEUE_STATES)})
    pending: int | None = None
    running: int | None = None
    inqueue: int | None = None


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
