"""The job planner's memory: what one reconcile hands the next (`Plan.memory`, given back as
`Observed.memory`). Losing it is safe: only delayed actions start their clocks again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


# The memory as a round reads it. A value: a step that changes it returns a new one
# (`updated`), so what the shell kept is never changed in place.
Memory = Mapping[str, Any]


def load(raw: Mapping[str, Any] | None) -> Memory:
    """What the shell kept (it holds only what earlier plans returned)."""
    return dict(raw or {})


def updated(m: Memory, changes: Mapping[str, Any], dropped: Iterable[str] = ()) -> Memory:
    """`m` with `changes` set and the keys `dropped` removed."""
    gone = frozenset(dropped)
    out = {k: v for k, v in m.items() if k not in gone}
    out.update(changes)
    return out


def spec_shape(m: Memory) -> SpecShape | None:
    return cast(PlannerMemory, m).get("specShape")


def timer_records(m: Memory) -> dict[str, TimerRecord] | None:
    return cast(PlannerMemory, m).get("timers")


def deleted_pod_group(m: Memory) -> str | None:
    return cast(PlannerMemory, m).get("deletedPodGroupUid")


def report_due(m: Memory) -> str | None:
    return cast(PlannerMemory, m).get("reportDue")
