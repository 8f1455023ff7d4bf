"""bus.volcano.sh/v1alpha1 Command: an action addressed to a Job or a Queue (suspend, resume, …)."""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field
from pydantic.config import JsonDict

from shared import labels
from shared.models.base import KubeObject

# The Job a Command addresses, as a metav1.OwnerReference (typed so the CRD keeps it unpruned).
OWNER_REFERENCE_PROPERTIES: Final[JsonDict] = {
    "apiVersion": {"type": "string", "description": "API version of the target."},
    "kind": {"type": "string", "description": "Kind of the target: Job or Queue."},
    "name": {"type": "string", "description": "Name of the target."},
    "uid": {"type": "string", "description": "UID of the target."},
    "controller": {"type": "boolean", "description": "Whether the target controls the Command."},
    "blockOwnerDeletion": {
        "type": "boolean",
        "description": "Whether deleting the target waits for the Command to be deleted.",
    },
}


# Addressed to a Queue (target kind Queue) and executed by the queue controller.
QUEUE_COMMAND_ACTIONS: Final = ("OpenQueue", "CloseQueue")


class Command(KubeObject):
    """An action for a Job (abort, resume, restart, terminate, complete) or a Queue (open,
    close)."""

    api_version: str | None = labels.BUS_API_VERSION
    kind: str | None = labels.COMMAND_KIND
    # A plain string, as in Volcano's CRD: Job actions (COMMAND_ACTIONS) and the queue
    # controller's OpenQueue/CloseQueue share the resource.
    action: str | None = None
    """The action: AbortJob, ResumeJob, RestartJob, TerminateJob or CompleteJob for a Job; OpenQueue
    or CloseQueue for a Queue."""
    target: dict[str, Any] | None = Field(
        default=None,
        json_schema_extra={
            "properties": OWNER_REFERENCE_PROPERTIES,
            "required": ["apiVersion", "kind", "name", "uid"],
        },
    )
    """The Job or Queue the action is for, as an owner reference."""
    reason: str | None = None
    """Why the action is asked for, in one word."""
    message: str | None = None
    """Why the action is asked for, for people."""
