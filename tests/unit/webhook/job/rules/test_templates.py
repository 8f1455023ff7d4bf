"""Each task's pod template and its NUMA topology policy."""

from __future__ import annotations

from typing import Any

import pytest

from shared.fielderrors import Path
from shared.models import TaskSpec
from tests.unit.webhook.job.rules.jobspecs import SPEC, spec, task
from webhook import memo
from webhook.job.rules.templates import validate_templates, validate_topology_policy


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "c", "image": "busybox", **fields}


def with_template(name: str, *containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return task(name, template={"spec": {"containers": list(containers)}}, **fields)


@pytest.mark.parametrize(
    ("tasks", "fields"),
    [
        pytest.param([task("a"), task("b")], [], id="ok"),
        pytest.param(
            [with_template("a", container(name="Bad_Name"))],
            ["spec.tasks[0].template.spec.containers[0].name"],
            id="template",
        ),
        pytest.param(
            [with_template("a", container(name="X")), with_template("b", container(name="X"))],
            [
                "spec.tasks[0].template.spec.containers[0].name",
                "spec.tasks[1].template.spec.containers[0].name",
            ],
            id="each-task-judged",
        ),
        pytest.param(
            [with_template("a", container(), topologyPolicy="sometimes")],
            ["spec.tasks[0].topologyPolicy"],
            id="topology-policy",
        ),
    ],
)
def test_validate_templates(tasks: list[dict[str, Any]], fields: list[str]) -> None:
    assert [e.field for e in validate_templates(spec(*tasks), SPEC)] == fields


def test_templates_are_remembered_in_the_memo_given() -> None:
    table = memo.Memo(8)
    validate_templates(spec(task("a"), task("b")), SPEC, recall=table.recall)
    assert len(table) == 1


@pytest.mark.parametrize(
    ("policy", "resources", "fields"),
    [
        pytest.param(None, None, [], id="none-set"),
        pytest.param("none", None, [], id="none"),
        pytest.param("best-effort", {"requests": {"cpu": "2"}}, [], id="whole-cpus"),
        pytest.param(
            "single-numa-node",
            {"requests": {"cpu": "500m"}},
            ["t.template.spec.containers[0].resources.requests[cpu]"],
            id="fraction",
        ),
        pytest.param(
            "restricted",
            None,
            ["t.template.spec.containers[0].resources.requests[cpu]"],
            id="no-cpu",
        ),
    ],
)
def test_validate_topology_policy(
    policy: str | None, resources: dict[str, Any] | None, fields: list[str]
) -> None:
    extra = {"resources": resources} if resources else {}
    raw = with_template("w", container(**extra))
    if policy is not None:
        raw["topologyPolicy"] = policy
    assert [
        e.field for e in validate_topology_policy(TaskSpec.from_wire(raw), Path.of("t"))
    ] == fields
