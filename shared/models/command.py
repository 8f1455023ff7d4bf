"""bus.volcano.sh/v1alpha1 Command: an action addressed to a Job (suspend, resume, …)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from shared import labels
from shared.models.base import KubeObject
from shared.models.job import COMMAND_ACTIONS


class Command(KubeObject):
    api_version: str | None = labels.BUS_API_VERSION
    kind: str | None = labels.COMMAND_KIND
    action: str | None = Field(
        default=None, json_schema_extra={"enum": [a.value for a in COMMAND_ACTIONS]}
    )
    target: dict[str, Any] | None = None
    reason: str | None = None
    message: str | None = None
