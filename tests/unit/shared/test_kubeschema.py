"""Kubernetes definitions inlined as structural CRD schemas, as controller-gen embeds them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared import kubeschema


def _walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = [node]
    for child in (node.get("properties") or {}).values():
        out += _walk(child)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            out += _walk(node[key])
    return out


def test_pod_template_spec_is_inlined_without_refs_or_descriptions() -> None:
    schema = kubeschema.pod_template_spec_schema()
    text = json.dumps(schema)
    assert "$ref" not in text
    assert '"description"' not in text
    assert schema["properties"]["spec"]["required"] == ["containers"]
    container = schema["properties"]["spec"]["properties"]["containers"]["items"]
    assert container["required"] == ["name"]
    assert "imagePullPolicy" in container["properties"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (kubeschema.QUANTITY, kubeschema.QUANTITY_SCHEMA),
        ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", {"x-kubernetes-int-or-string": True}),
        (kubeschema.OBJECT_META, kubeschema.EMBEDDED_META_SCHEMA),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", {"type": "string", "format": "date-time"}),
    ],
)
def test_special_types(name: str, expected: dict[str, Any]) -> None:
    assert kubeschema.structural(name) == expected


def test_every_node_is_typed_or_int_or_string() -> None:
    for schema in (
        kubeschema.pod_template_spec_schema(),
        kubeschema.structural(kubeschema.PVC_SPEC),
    ):
        for node in _walk(schema):
            assert "type" in node or node.get("x-kubernetes-int-or-string"), node


def test_each_call_returns_a_fresh_copy() -> None:
    first = kubeschema.pod_template_spec_schema()
    first["properties"].clear()
    assert kubeschema.pod_template_spec_schema()["properties"]


def test_resource_list_is_a_map_of_quantities() -> None:
    assert kubeschema.resource_list_schema() == {
        "type": "object",
        "additionalProperties": kubeschema.QUANTITY_SCHEMA,
    }


def test_definitions_are_read_once_and_complete() -> None:
    assert kubeschema.definitions() is kubeschema.definitions()
    assert kubeschema.POD_TEMPLATE_SPEC in kubeschema.definitions()
