"""bus.volcano.sh/v1alpha1 Command: an action addressed to a Job or a Queue (suspend, resume, …)."""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field
from pydantic.config import JsonDict

from shared import labels
from shared.models.base import KubeObject

# The Job a Command addresses, as a metav1.OwnerReference (typed so the CRD keeps it unpruned).
OWNER_REFERENCE_PROPERTIES: Final[JsonDict] = {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "name": {"type": "string"},
    "uid": {"type": "string"},
    "controller": {"type": "boolean"},
    "blockOwnerDeletion": {"type": "boolean"},
}


# Addressed to a Queue (target kind Queue) and executed by the queue controller.
QUEUE_COMMAND_ACTIONS: Final = ("OpenQueue", "CloseQueue")


class Command(KubeObject):
    api_version: str | None = labels.BUS_API_VERSION
    kind: str | None = labels.COMMAND_KIND
    # A plain string, as in Volcano's CRD: Job actions (COMMAND_ACTIONS) and the queue
    # controller's OpenQueue/CloseQueue share the resource.
    action: str | None = None
    target: dict[str, Any] | None = Field(
        default=None,
        json_schema_extra={
            "properties": OWNER_REFERENCE_PROPERTIES,
            "required": ["apiVersion", "kind", "name", "uid"],
        },
    )
    reason: str | None = None
    message: str | None = None
