"""A container's environment, as kubelet builds it."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest

from localcluster.simulator.podenv import ContainerConfigError, container_environment, expand

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "a"}},
    "spec": {"nodeName": "node-1", "serviceAccountName": "sa"},
    "status": {"podIP": "127.1.2.3", "hostIP": "10.0.0.1"},
}
CONFIG_MAPS = {("ns", "cm"): {"color": "blue", "size": "3"}}
SECRETS = {("ns", "s"): {"password": "hunter2"}}


def config_maps(namespace: str, name: str) -> Mapping[str, str] | None:
    return CONFIG_MAPS.get((namespace, name))


def secrets(namespace: str, name: str) -> Mapping[str, str] | None:
    return SECRETS.get((namespace, name))


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return container_environment(POD, container, config_maps, secrets, {"BASE": "b"})


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ({"name": "X", "value": "plain"}, "plain"),
        ({"name": "X", "value": "$(BASE)-$(MISSING)-$$(BASE)"}, "b-$(MISSING)-$(BASE)"),
        ({"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "color"}}}, "blue"),
        ({"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}}, "hunter2"),
        ({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}, "ns"),
        ({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}, "a"),
        ({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}, "127.1.2.3"),
        ({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}}, "sa"),
    ],
)
def test_env_values(variable: dict[str, Any], value: str) -> None:
    assert env_of({"env": [variable]})["X"] == value


def test_resource_field_ref_rounds_up_over_the_divisor() -> None:
    container = {
        "resources": {"limits": {"cpu": "1500m", "memory": "64Mi"}},
        "env": [
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {
                "name": "MEM",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
        ],
    }
    env = env_of(container)
    assert (env["CPU"], env["MEM"]) == ("2", "64")


def test_env_from_with_prefix_then_env_wins() -> None:
    container = {
        "envFrom": [
            {"configMapRef": {"name": "cm"}, "prefix": "CM_"},
            {"secretRef": {"name": "s"}},
        ],
        "env": [{"name": "CM_color", "value": "red"}],
    }
    env = env_of(container)
    assert (env["CM_color"], env["CM_size"], env["password"]) == ("red", "3", "hunter2")


@pytest.mark.parametrize(
    ("container", "message"),
    [
        (
            {
                "env": [
                    {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}
                ]
            },
            'configmap "nope" not found',
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]},
            "couldn't find key k in ConfigMap ns/cm",
        ),
        ({"envFrom": [{"secretRef": {"name": "nope"}}]}, 'secret "nope" not found'),
    ],
)
def test_missing_sources_fail_the_container(container: dict[str, Any], message: str) -> None:
    with pytest.raises(ContainerConfigError, match=message):
        env_of(container)


def test_optional_sources_are_skipped() -> None:
    ref = {"name": "nope", "key": "k", "optional": True}
    assert "X" not in env_of({"env": [{"name": "X", "valueFrom": {"secretKeyRef": ref}}]})


def test_expand_leaves_undefined_references() -> None:
    assert expand("$(A)$(B)", {"A": "1"}) == "1$(B)"
    assert base64.b64encode(b"x")  # the secret lookups hand decoded values
