"""JobSpecs for the rule tables: a spec from its wire form, tasks with a minimal template."""

from __future__ import annotations

from typing import Any

from shared.fielderrors import FieldError, Path
from shared.models.job import JobSpec

SPEC = Path.of("spec")
Raw = dict[str, Any]


def spec(*tasks: Raw, **fields: Any) -> JobSpec:
    return JobSpec.from_wire({"tasks": list(tasks), **fields})


def task(name: str = "worker", replicas: int = 2, **fields: Any) -> Raw:
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return {"name": name, "replicas": replicas, "template": template, **fields}


def found(errors: list[FieldError]) -> list[tuple[str, str]]:
    """(field, detail) of each error, in order."""
    return [(e.field, e.detail) for e in errors]
