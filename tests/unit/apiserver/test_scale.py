"""The scale subresource: a Scale view of a workload, and what writing one does."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.apiserver import errors, patches, scale

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
    "spec": {
        "replicas": 2,
        "selector": {
            "matchLabels": {"app": "web", "tier": "fe"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        },
    },
    "status": {"replicas": 1},
}


def test_the_scale_of_a_deployment() -> None:
    assert scale.scale_of(DEPLOYMENT) == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": {"replicas": 2},
        "status": {"replicas": 1, "selector": "app=web,tier=fe,env in (dev,prod),!canary"},
    }


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        pytest.param("", {"spec": {"replicas": 5}}, id="put"),
        pytest.param(patches.MERGE_PATCH, {"spec": {"replicas": 5}}, id="merge"),
        pytest.param(patches.STRATEGIC_MERGE_PATCH, {"spec": {"replicas": 5}}, id="strategic"),
        pytest.param(
            patches.JSON_PATCH, [{"op": "replace", "path": "/spec/replicas", "value": 5}], id="json"
        ),
    ],
)
def test_writing_a_scale_sets_the_replicas(content_type: str, body: Any) -> None:
    wanted = scale.wanted_scale(scale.scale_of(DEPLOYMENT), body, content_type)
    new = scale.scaled(DEPLOYMENT, wanted)
    assert new["spec"]["replicas"] == 5
    assert new["spec"]["selector"] == DEPLOYMENT["spec"]["selector"]
    assert DEPLOYMENT["spec"]["replicas"] == 2, "the stored object is not changed in place"


def test_a_scale_resource_version_is_a_precondition() -> None:
    wanted = {"metadata": {"resourceVersion": "3"}, "spec": {"replicas": 1}}
    assert scale.scaled(DEPLOYMENT, wanted)["metadata"]["resourceVersion"] == "3"


def test_negative_replicas_are_invalid() -> None:
    with pytest.raises(errors.StatusError) as raised:
        scale.scaled(DEPLOYMENT, {"spec": {"replicas": -1}})
    assert raised.value.code == 422
    assert raised.value.message == (
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater '
        "than or equal to 0"
    )


def test_apply_is_not_a_scale_patch() -> None:
    with pytest.raises(errors.StatusError) as raised:
        scale.wanted_scale(scale.scale_of(DEPLOYMENT), {}, patches.APPLY_PATCH)
    assert raised.value.code == 415
