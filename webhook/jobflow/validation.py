"""JobFlow and JobTemplate admission rules: pure functions of the object.

A flow is a DAG, as Volcano's `/jobflows/validate` requires: every dependency target names a
flow of the same JobFlow and no flow depends on itself, directly or through others. The
messages keep Volcano's phrases (`jobflow Flow is not DAG`, `vertex is not defined`) and add
where and which cycle. What Volcano admits and vcjob would rather not (two flows of one name, a
JobTemplate a Job could not be created from) is admitted with a warning.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from shared.fielderrors import FieldError, Path
from webhook.job.create import validate_create
from webhook.job.reading import sort_errors
from webhook.settings import Settings

NOT_DAG: Final = "jobflow Flow is not DAG"
VERTEX_NOT_DEFINED: Final = "vertex is not defined"
FLOWS: Final = Path.of("spec", "flows")
# The Job a template stands for when it is checked; its name never comes from the template.
_SAMPLE_JOB_NAME: Final = "jobflow-step"


@dataclasses.dataclass(frozen=True)
class Step:
    """One flow entry as the DAG sees it: its position, name and dependency targets."""

    index: int
    name: str
    targets: tuple[str, ...]


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def read_steps(raw: Any) -> list[Step]:
    """The flows of a JobFlow object (entries the CRD schema would refuse are skipped)."""
    flows = _object(_object(raw).get("spec")).get("flows")
    steps: list[Step] = []
    for index, entry in enumerate(flows if isinstance(flows, list) else []):
        entry = _object(entry)
        name = entry.get("name")
        if not isinstance(name, str):
            continue
        targets = _object(entry.get("dependsOn")).get("targets")
        listed = targets if isinstance(targets, list) else []
        steps.append(Step(index, name, tuple(str(t) for t in listed)))
    return steps


def _target_path(step: Step, position: int) -> Path:
    return FLOWS.index(step.index).child("dependsOn", "targets").index(position)


def undefined_targets(steps: list[Step]) -> list[FieldError]:
    """A target that names no flow of this JobFlow."""
    defined = {step.name for step in steps}
    return [
        FieldError.invalid(
            _target_path(step, position), target, f"{NOT_DAG}: {VERTEX_NOT_DEFINED}: {target}"
        )
        for step in steps
        for position, target in enumerate(step.targets)
        if target not in defined
    ]


def find_cycles(steps: list[Step]) -> list[list[str]]:
    """Every cycle the dependencies close, once each, as the names along it (first name repeated
    at the end); entries sharing a name share their dependencies."""
    edges: dict[str, list[str]] = {}
    for step in steps:
        edges.setdefault(step.name, [])
        edges[step.name].extend(t for t in step.targets if t not in edges[step.name])
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(edges, white)
    cycles: list[list[str]] = []
    for root in edges:
        if color[root] != white:
            continue
        # Iterative depth-first search: a flow may have thousands of entries.
        path: list[str] = [root]
        stack = [iter(edges[root])]
        color[root] = grey
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                color[path.pop()] = black
                stack.pop()
                continue
            if nxt not in color:
                continue  # undefined: reported by undefined_targets
            if color[nxt] == grey:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif color[nxt] == white:
                color[nxt] = grey
                path.append(nxt)
                stack.append(iter(edges[nxt]))
    return cycles


def cycle_errors(steps: list[Step]) -> list[FieldError]:
    errors: list[FieldError] = []
    for cycle in find_cycles(steps):
        # The entry that holds the cycle's first edge (of several entries of one name).
        step = next(s for s in steps if s.name == cycle[0] and cycle[1] in s.targets)
        errors.append(
            FieldError.invalid(
                _target_path(step, step.targets.index(cycle[1])),
                cycle[1],
                f"{NOT_DAG}: the dependencies form a cycle: {' -> '.join(cycle)}",
            )
        )
    return errors


def duplicate_warnings(steps: list[Step]) -> list[str]:
    """Volcano admits two flows of one name; the controller runs the first one only."""
    seen: dict[str, int] = {}
    warnings: list[str] = []
    for step in steps:
        if step.name in seen:
            warnings.append(
                f"{FLOWS.index(step.index).child('name')}: duplicate flow name {step.name!r} "
                f"(first at {FLOWS.index(seen[step.name])}): only the first one runs"
            )
        else:
            seen[step.name] = step.index
    return warnings


def validate_jobflow(raw: Any) -> tuple[list[FieldError], list[str]]:
    """The problems of a JobFlow (CREATE and UPDATE alike) and the warnings it is admitted with."""
    if not isinstance(raw, dict):
        return [FieldError.invalid(Path(), "<value>", "must be a JobFlow object")], []
    steps = read_steps(raw)
    errors = undefined_targets(steps) + cycle_errors(steps)
    return sort_errors(raw, errors), duplicate_warnings(steps)


def template_job(raw: dict[str, Any]) -> dict[str, Any]:
    """The Job a flow would create from this template, for the Job validator."""
    meta = _object(raw.get("metadata"))
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": _SAMPLE_JOB_NAME,
            "namespace": meta.get("namespace") or "default",
        },
        "spec": raw.get("spec"),
    }


def jobtemplate_warnings(raw: Any, settings: Settings) -> list[str]:
    """Volcano admits any JobTemplate; vcjob admits it too but says what a Job created from it
    would be refused for (the queue is not checked: it may exist when the flow runs)."""
    if not isinstance(raw, dict):
        return []
    errors = validate_create(template_job(raw), None, settings)
    return [
        f"a Job created from this template would be refused: {error}"
        for error in errors
        if not error.field.startswith("metadata.name")
    ]
