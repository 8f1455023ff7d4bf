"""Kubernetes definitions inlined as structural CRD schemas, as controller-gen embeds them."""

from __future__ import annotations

import json
import re
from pathlib import Path
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


def _strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_descriptions(v) for k, v in node.items() if k != "description"}
    return node


def test_pod_template_spec_is_inlined_without_refs_with_kubernetes_descriptions() -> None:
    schema = kubeschema.pod_template_spec_schema()
    text = json.dumps(schema)
    assert "$ref" not in text
    assert schema["properties"]["spec"]["required"] == ["containers"]
    container = schema["properties"]["spec"]["properties"]["containers"]["items"]
    assert container["required"] == ["name"]
    assert "imagePullPolicy" in container["properties"]
    # `kubectl explain` reads these: every field is described, a field by its own words.
    for node in _walk(schema)[1:]:
        for name, child in (node.get("properties") or {}).items():
            assert child.get("description"), name
    resources = container["properties"]["resources"]["description"]
    assert resources.startswith("Compute Resources required by this container.")


EMBEDDED_META: dict[str, Any] = {
    "type": "object",
    "properties": {
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    },
}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (kubeschema.QUANTITY, kubeschema.QUANTITY_SCHEMA),
        ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", {"x-kubernetes-int-or-string": True}),
        (kubeschema.OBJECT_META, EMBEDDED_META),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", {"type": "string", "format": "date-time"}),
    ],
)
def test_special_types(name: str, expected: dict[str, Any]) -> None:
    assert _strip_descriptions(kubeschema.structural(name)) == expected


def test_the_definitions_come_from_the_local_clusters_kubernetes() -> None:
    """The data is regenerated with the control plane: its version is the one go.mod pins."""
    go_mod = (Path(__file__).resolve().parents[3] / "controlplane" / "go.mod").read_text()
    pinned = re.search(r"^require k8s\.io/kubernetes (v\S+)", go_mod, re.MULTILINE)
    assert pinned is not None
    assert kubeschema.kubernetes_version() == pinned.group(1)


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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Name of the container.", "Name of the container."),
        ("List of ports. Not specifying a port here\nDOES NOT prevent it.", "List of ports."),
        ("Version 1.2.3 of the\n  API", "Version 1.2.3 of the API"),
        ("", ""),
    ],
)
def test_kubernetes_descriptions_are_cut_to_their_first_sentence(text: str, expected: str) -> None:
    assert kubeschema.first_sentence(text) == expected
