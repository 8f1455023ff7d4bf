"""`spec.tasks[*].dependsOn`: tasks wait for tasks of the same job, without cycles."""

from __future__ import annotations

from typing import Final

from shared.fielderrors import FieldError, Path
from shared.models.job import JobSpec

ITERATIONS: Final = ("any", "all")


def _cycle_path(start: str, graph: dict[str, list[str]]) -> list[str] | None:
    """A shortest path start → … → start following dependency edges, if there is one."""
    frontier: list[list[str]] = [[start]]
    visited: set[str] = set()
    while frontier:
        next_frontier: list[list[str]] = []
        for trail in frontier:
            for nxt in graph.get(trail[-1], []):
                if nxt == start:
                    return [*trail, start]
                if nxt not in visited:
                    visited.add(nxt)
                    next_frontier.append([*trail, nxt])
        frontier = next_frontier
    return None


def validate_depends_on(spec: JobSpec, path: Path) -> list[FieldError]:
    """Each dependency names another task once; iteration is any or all; no cycle (reported
    once, on the first task of it)."""
    errors: list[FieldError] = []
    tasks = path.child("tasks")
    known = {t.name for t in spec.tasks if t.name}
    graph: dict[str, list[str]] = {}
    for i, task in enumerate(spec.tasks):
        if task.depends_on is None:
            continue
        where = tasks.index(i).child("dependsOn")
        listed: set[str] = set()
        for k, dependency in enumerate(task.depends_on.name or []):
            entry = where.child("name").index(k)
            if dependency == task.name:
                errors.append(
                    FieldError.invalid(entry, dependency, "a task cannot depend on itself")
                )
            elif dependency not in known:
                errors.append(
                    FieldError.not_found(entry, dependency, "no task of this name in spec.tasks")
                )
            elif dependency in listed:
                errors.append(FieldError.duplicate(entry, dependency))
            elif task.name:
                graph.setdefault(task.name, []).append(dependency)
            listed.add(dependency)
        iteration = task.depends_on.iteration
        if iteration is not None and iteration not in ITERATIONS:
            errors.append(FieldError.not_supported(where.child("iteration"), iteration, ITERATIONS))
    reported: set[str] = set()
    for i, task in enumerate(spec.tasks):
        if not task.name or task.name in reported:
            continue
        cycle = _cycle_path(task.name, graph)
        if cycle is None:
            continue
        reported.update(cycle)
        errors.append(
            FieldError.invalid(
                tasks.index(i).child("dependsOn", "name"),
                task.depends_on.name if task.depends_on else None,
                f"dependencies form a cycle: {' -> '.join(cycle)}",
            )
        )
    return errors
