"""Task dependencies: other tasks of the job, once each, no cycles."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.webhook.job.rules.jobspecs import SPEC, found, spec, task
from webhook.job.rules.depends_on import validate_depends_on


def on(*names: str, **fields: Any) -> dict[str, Any]:
    return {"name": list(names), **fields}


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        pytest.param([task("a"), task("b", dependsOn=on("a"))], [], id="ok"),
        pytest.param(
            [task("a", dependsOn=on("a"))],
            [("spec.tasks[0].dependsOn.name[0]", "a task cannot depend on itself")],
            id="self",
        ),
        pytest.param(
            [task("a", dependsOn=on("z"))],
            [("spec.tasks[0].dependsOn.name[0]", "no task of this name in spec.tasks")],
            id="unknown",
        ),
        pytest.param(
            [task("a"), task("b", dependsOn=on("a", "a"))],
            [("spec.tasks[1].dependsOn.name[1]", "")],
            id="twice",
        ),
        pytest.param(
            [task("a"), task("b", dependsOn=on("a", iteration="some"))],
            [("spec.tasks[1].dependsOn.iteration", 'supported values: "any", "all"')],
            id="iteration",
        ),
        pytest.param(
            [task("a", dependsOn=on("b")), task("b", dependsOn=on("a"))],
            [("spec.tasks[0].dependsOn.name", "dependencies form a cycle: a -> b -> a")],
            id="cycle-reported-once",
        ),
    ],
)
def test_validate_depends_on(tasks: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    assert found(validate_depends_on(spec(*tasks), SPEC)) == expected
