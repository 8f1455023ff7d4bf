"""The job planner's memory: what one reconcile hands the next (`Plan.memory`, given back as
`Observed.memory`). Losing it is safe: only delayed actions start their clocks again.
"""

from __future__ import annotations

import copy
from typing import Any, Final, TypedDict, cast

from controller.job.decide.scaling import SpecShape

SPEC_SHAPE: Final = "specShape"
TIMERS: Final = "timers"
DELETED_POD_GROUP: Final = "deletedPodGroupUid"
REPORT_DUE: Final = "reportDue"


class TimerRecord(TypedDict):
    """A delayed action as remembered (`controller.job.decide.timers.Timer` decoded)."""

    event: str
    action: str
    fireAt: str
    task: str | None
    pod: str | None
    podUid: str | None
    detail: str


class PlannerMemory(TypedDict, total=False):
    # `{"minAvailable": n, "replicas": {task: n}}` last acted on, to raise JobUpdated.
    specShape: SpecShape
    # Delayed actions by key: `<event>/pod/<pod>`, `<event>/task/<task>` or `<event>`.
    timers: dict[str, TimerRecord]
    # The PodGroup a full restart deleted, so a stale cache copy of it never opens the gang gate.
    deletedPodGroupUid: str
    # When a status change that only reports must be written at the latest (RFC 3339).
    reportDue: str
    # The ssh plugin's generated key pair `{private, public}` until its Secret exists.
    sshKey: dict[str, str]


def load(raw: dict[str, Any] | None) -> PlannerMemory:
    """A copy of what the shell kept (it holds only what earlier plans returned)."""
    return cast(PlannerMemory, copy.deepcopy(dict(raw or {})))


def plugin_entries(m: PlannerMemory) -> dict[str, Any]:
    """The memory as the plugins read and extend it (each owns the keys it names)."""
    return cast(dict[str, Any], m)
