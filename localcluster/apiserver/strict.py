"""Unknown fields of built-in objects, found (and dropped) against the Kubernetes definitions.

kube-apiserver decodes built-in objects into Go structs, which silently drops unknown fields;
with `fieldValidation=Strict` it reports them instead. This walks the object along its 1.31
OpenAPI definition to do the same.
"""

from __future__ import annotations

from typing import Any

from localcluster.apiserver.discovery import builtin_definition_name, builtin_definitions


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    definitions = builtin_definitions()
    seen = 0
    while "$ref" in schema and seen < 10:
        schema = definitions.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
        seen += 1
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        return _resolve(all_of[0])
    return schema


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def prune(schema: dict[str, Any], value: Any, path: str, found: list[str]) -> None:
    schema = _resolve(schema)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        if isinstance(properties, dict) and properties:
            for key in list(value):
                if key in properties:
                    prune(properties[key], value[key], _join(path, key), found)
                else:
                    found.append(_join(path, key))
                    del value[key]
        elif isinstance(additional, dict):
            for key in value:
                prune(additional, value[key], _join(path, key), found)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                prune(items, item, f"{path}[{index}]", found)


def prune_builtin(group: str, version: str, kind: str, obj: dict[str, Any]) -> list[str]:
    """Drop unknown fields in place; return their paths (`spec.foo`, `spec.containers[0].bar`)."""
    name = builtin_definition_name(group, version, kind)
    if name is None:
        return []
    found: list[str] = []
    # metadata is checked too, as kube does.
    prune({"$ref": name}, obj, "", found)
    return found
