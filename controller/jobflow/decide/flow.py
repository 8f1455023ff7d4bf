"""What a JobFlow and its Jobs say: the steps, their dependency targets and accepted phases,
the Job each step makes and its phase."""

from __future__ import annotations

from typing import Any, Final

from shared.models.flow import (
    DEFAULT_DEPENDENCY_PHASES,
)
from shared.wire import WireObject

FINISHED: Final = frozenset({"Completed", "Failed", "Terminated"})


FAILURES: Final = frozenset({"Failed", "Terminated"})


MAX_LABEL_VALUE: Final = 63


def as_object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def job_name(flow_name: str, step: str) -> str:
    return f"{flow_name}-{step}"


def object_string(namespace: str, name: str) -> str:
    """Volcano's `<namespace>.<name>` value of the createdBy labels and annotations."""
    return f"{namespace}.{name}"


def steps_of(flow: WireObject) -> dict[str, WireObject]:
    """The flow entries by name; of entries sharing a name the first one counts."""
    steps: dict[str, WireObject] = {}
    for entry in as_list(as_object(flow.get("spec")).get("flows")):
        name = as_object(entry).get("name")
        if isinstance(name, str) and name and name not in steps:
            steps[name] = entry
    return steps


def targets_of(step: WireObject) -> list[str]:
    return [str(t) for t in as_list(as_object(step.get("dependsOn")).get("targets"))]


def accepted_phases(step: WireObject) -> frozenset[str] | None:
    """The target phases that meet the step's dependency; None when only probes decide."""
    depends = as_object(step.get("dependsOn"))
    phases = depends.get("phases")
    if isinstance(phases, list) and phases:
        return frozenset(str(p) for p in phases)
    if depends.get("probe"):
        return None
    return frozenset(p.value for p in DEFAULT_DEPENDENCY_PHASES)
