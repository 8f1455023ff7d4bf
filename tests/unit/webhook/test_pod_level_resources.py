"""A task template's pod-level `resources`, judged as kube-apiserver judges a Pod's."""

from __future__ import annotations

from typing import Any

import pytest

from shared.fielderrors import Path
from webhook.job.podtemplate import validate_template

TEMPLATE = Path.of("spec", "tasks").index(0).child("template")


def template(pod: dict[str, Any], *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"spec": {"resources": pod, "containers": list(containers), **spec}}


def box(name: str = "c", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": resources}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(
            template(
                {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}, box(requests={"cpu": "1"})
            ),
            [],
            id="within",
        ),
        pytest.param(
            template(
                {"requests": {"cpu": "1"}},
                box(requests={"cpu": "1"}),
                box("d", requests={"cpu": "500m"}),
            ),
            [
                'spec.tasks[0].template.spec.resources.requests[cpu]: Invalid value: "1": '
                "must be greater than or equal to aggregate container requests of 1500m"
            ],
            id="below-the-containers-sum",
        ),
        pytest.param(
            template({"requests": {"memory": "1Gi"}}, box(limits={"memory": "2Gi"})),
            [
                'spec.tasks[0].template.spec.resources.requests[memory]: Invalid value: "1Gi": '
                "must be greater than or equal to aggregate container requests of 2Gi"
            ],
            id="a-container-limit-is-its-request",
        ),
        pytest.param(
            template({"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}, box()),
            [
                'spec.tasks[0].template.spec.resources.requests[cpu]: Invalid value: "3": '
                "must be less than or equal to cpu limit of 2"
            ],
            id="above-its-own-limit",
        ),
        pytest.param(
            template({"limits": {"cpu": "1"}}, box(limits={"cpu": "2"})),
            [
                "spec.tasks[0].template.spec.containers[0].resources.limits[cpu]: Invalid value: "
                '"2": must be less than or equal to pod limits of 1'
            ],
            id="a-container-limit-above-the-pods",
        ),
        pytest.param(
            template(
                {"requests": {"hugepages-2Mi": "4Mi"}, "limits": {"hugepages-2Mi": "4Mi"}},
                box(limits={"hugepages-2Mi": "4Mi"}),
                box("d", limits={"hugepages-2Mi": "4Mi"}),
            ),
            [
                "spec.tasks[0].template.spec.resources.requests[hugepages-2Mi]: Invalid value: "
                '"4Mi": must be greater than or equal to aggregate container requests of 8Mi',
                "spec.tasks[0].template.spec.resources.limits[hugepages-2Mi]: Invalid value: "
                '"4Mi": must be greater than or equal to aggregate container limits of 8Mi',
            ],
            id="hugepages-limits-cover-the-containers",
        ),
        pytest.param(
            template(
                {"requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}},
                box(limits={"memory": "1Gi"}),
                box("d", limits={"memory": "1536Mi"}),
            ),
            [
                'spec.tasks[0].template.spec.resources.requests[memory]: Invalid value: "2Gi": '
                "must be greater than or equal to aggregate container requests of 2560Mi"
            ],
            id="memory-limits-may-add-up-above-the-pods",
        ),
        pytest.param(
            template({"limits": {"nvidia.com/gpu": "1"}}, box()),
            [
                "spec.tasks[0].template.spec.resources.limits[nvidia.com/gpu]: Unsupported "
                'value: "nvidia.com/gpu": supported values: "cpu", "hugepages-", "memory"'
            ],
            id="only-cpu-memory-hugepages",
        ),
        pytest.param(
            template({"limits": {"cpu": "1"}}, box(), os={"name": "windows"}),
            ["spec.tasks[0].template.spec.resources: Forbidden: may not be set for a windows pod"],
            id="not-on-windows",
        ),
        pytest.param(
            template({"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}, box()),
            [
                "spec.tasks[0].template.spec.resources.claims: Forbidden: claims may not be set "
                "for Resources at pod-level"
            ],
            id="no-claims",
        ),
    ],
)
def test_pod_level_resources(given: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in validate_template(given, TEMPLATE)] == expected
