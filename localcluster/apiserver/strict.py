"""Unknown fields and mistyped values of built-in objects, against the Kubernetes definitions.

kube-apiserver decodes built-in objects into Go structs, which silently drops unknown fields
(with `fieldValidation=Strict` it reports them instead) and refuses a value of the wrong JSON type
with 400. This walks the object along its 1.31 OpenAPI definition to do the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from localcluster.apiserver.discovery import builtin_definition_name, builtin_definitions

# The definitions are loaded once and never change, so what is derived from one of their schema
# nodes is kept by the node's identity: each object walk then only looks things up.
_RESOLVED: dict[int, dict[str, Any]] = {}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    key = id(schema)
    resolved = _RESOLVED.get(key)
    if resolved is None:
        resolved = _resolve_uncached(schema)
        _RESOLVED[key] = resolved
    return resolved


def _resolve_uncached(schema: dict[str, Any]) -> dict[str, Any]:
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
    root = builtin_definitions().get(name)
    found: list[str] = []
    if root is not None:
        # metadata is checked too, as kube does.
        prune(root, obj, "", found)
    return found


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}
_GO_TYPES = {
    "string": "string",
    "boolean": "bool",
    "number": "float64",
    "array": "[]",
    "object": "map",
}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _allowed(schema: dict[str, Any]) -> list[str] | None:
    """The JSON types a schema node takes, or None when it does not say."""
    branches = schema.get("oneOf")
    if isinstance(branches, list):
        types: list[str] = []
        for branch in branches:
            allowed = _allowed(branch) if isinstance(branch, dict) else None
            if allowed is None:
                return None
            types.extend(allowed)
        return types
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
        return list(declared)
    return None


@dataclass(frozen=True)
class _TypeCheck:
    """What a schema node's declared types accept, compiled once."""

    types: tuple[type, ...]  # accepted Python types, bool aside
    takes_bool: bool
    wanted: str  # the first declared type other than null, for the message
    go_type: str

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool):
            return self.takes_bool
        return isinstance(value, self.types)


_CHECKS: dict[int, _TypeCheck | None] = {}


def _type_check(schema: dict[str, Any]) -> _TypeCheck | None:
    key = id(schema)
    if key not in _CHECKS:
        allowed = _allowed(schema)
        if allowed is None:
            _CHECKS[key] = None
        else:
            wanted = next((t for t in allowed if t != "null"), "object")
            go_type = str(schema.get("format")) if wanted == "integer" else _GO_TYPES.get(wanted)
            types = tuple(
                t for name in allowed if name != "boolean" for t in _JSON_TYPES.get(name, ())
            )
            _CHECKS[key] = _TypeCheck(types, "boolean" in allowed, wanted, go_type or wanted)
    return _CHECKS[key]


def _type_error(schema: dict[str, Any], value: Any, path: list[str]) -> str | None:
    if value is None:
        return None  # Go decodes null as the zero value
    schema = _resolve(schema)
    check = _type_check(schema)
    if check is not None and not check.accepts(value):
        return (
            f"json: cannot unmarshal {_json_type(value)} into Go struct field {'.'.join(path)} "
            f"of type {check.go_type}"
        )
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key) if isinstance(properties, dict) else None
            if child is None and isinstance(additional, dict):
                child = additional
            if isinstance(child, dict):
                path.append(key)
                error = _type_error(child, item, path)
                path.pop()
                if error:
                    return error
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                if error := _type_error(items, item, path):
                    return error
    return None


def first_type_error(group: str, version: str, kind: str, obj: dict[str, Any]) -> str | None:
    """How Go's JSON decoder words the first value of the wrong type, or None."""
    name = builtin_definition_name(group, version, kind)
    if name is None:
        return None
    root = builtin_definitions().get(name)
    return _type_error(root, obj, [kind]) if root is not None else None
