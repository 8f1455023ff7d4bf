"""Structural schemas of CustomResourceDefinitions: pruning, defaulting and validation.

Pure functions over one CRD version's `openAPIV3Schema` and a decoded object, worded like
kube-apiserver (apiextensions-apiserver + kube-openapi). Paths use Kubernetes' form
(`spec.tasks[0].name`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

from shared.fielderrors import ErrorType, FieldError, Path

Schema = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
EMBEDDED = "x-kubernetes-embedded-resource"
INT_OR_STRING = "x-kubernetes-int-or-string"

#: The fields of ObjectMeta that survive pruning of `metadata` (at the root and in embedded
#: resources); anything else under metadata is dropped as kube's ObjectMeta decoding does.
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_TYPE_META = ("apiVersion", "kind")


# --------------------------------------------------------------------------------------------
# pruning


def prune_unknown_fields(schema: Schema, obj: dict[str, Any]) -> list[str]:
    """Drop, in place, every field the schema does not declare; return their paths in order.

    `apiVersion`, `kind` and `metadata` at the root are kept (metadata trimmed to ObjectMeta).
    """
    removed: list[str] = []
    _prune_meta(obj, Path(), removed)
    _prune_object(schema, obj, Path(), removed, root=True)
    return removed


def _prune_meta(obj: dict[str, Any], path: Path, removed: list[str]) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    for key in list(meta):
        if key not in OBJECT_META_FIELDS:
            del meta[key]
            removed.append(str(path.child("metadata", key)))


def _prune(schema: Schema, value: Any, path: Path, removed: list[str]) -> None:
    if isinstance(value, dict):
        if schema.get(EMBEDDED):
            _prune_meta(value, path, removed)
        _prune_object(schema, value, path, removed, root=bool(schema.get(EMBEDDED)))
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _prune(items, item, path.index(i), removed)
        # An array without an items schema keeps its elements only when unknown fields are
        # preserved; structural schemas always declare items, so there is nothing to walk.


def _prune_object(
    schema: Schema, obj: dict[str, Any], path: Path, removed: list[str], *, root: bool
) -> None:
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get(PRESERVE))
    for key in list(obj):
        child = path.child(key)
        if root and (key in _TYPE_META or key == "metadata"):
            continue
        if key in properties:
            _prune(properties[key], obj[key], child, removed)
        elif isinstance(additional, dict):
            _prune(additional, obj[key], child, removed)
        elif additional is True or preserve:
            continue
        else:
            del obj[key]
            removed.append(str(child))


# --------------------------------------------------------------------------------------------
# defaulting


def apply_schema_defaults(schema: Schema, obj: dict[str, Any]) -> None:
    """Apply `default` values in place, as kube's structural defaulting does.

    A property absent from an object that exists gets a deep copy of its default; a defaulted
    value is itself defaulted. A `null` for a property that is not `nullable` takes the default
    when there is one and is dropped otherwise.
    """
    _default(schema, obj)


def _default(schema: Schema, value: Any) -> None:
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        for key, prop in properties.items():
            if key in value and value[key] is None and not prop.get("nullable"):
                if "default" in prop:
                    value[key] = copy.deepcopy(prop["default"])
                else:
                    del value[key]
            elif key not in value and "default" in prop:
                value[key] = copy.deepcopy(prop["default"])
        additional = schema.get("additionalProperties")
        for key, child in value.items():
            if key in properties:
                _default(properties[key], child)
            elif isinstance(additional, dict):
                _default(additional, child)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                if item is None and not items.get("nullable") and "default" in items:
                    value[i] = copy.deepcopy(items["default"])
                _default(items, value[i])


# --------------------------------------------------------------------------------------------
# validation


def validate_against_schema(schema: Schema, obj: dict[str, Any]) -> list[FieldError]:
    """Every violation of the schema, worded like kube-apiserver's CRD validation."""
    errors: list[FieldError] = []
    _validate(schema, obj, Path(), errors, root=True)
    return errors


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _matches_type(declared: str, actual: str) -> bool:
    return declared == actual or (declared == "number" and actual == "integer")


def _in_body(path: Path) -> str:
    return f"{path} in body"


def _number_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _validate(
    schema: Schema, value: Any, path: Path, errors: list[FieldError], *, root: bool = False
) -> None:
    actual = _type_name(value)
    if value is None:
        if schema.get("nullable") or (schema.get(PRESERVE) and "type" not in schema):
            return
        declared = schema.get("type")
        if declared or schema.get(INT_OR_STRING):
            shown = declared or "string"
            errors.append(
                FieldError.invalid(
                    path, "null", f'{_in_body(path)} must be of type {shown}: "null"'
                )
            )
        return
    if schema.get(INT_OR_STRING):
        if actual not in ("integer", "string"):
            errors.append(
                FieldError.invalid(
                    path, actual, f'{_in_body(path)} must be of type integer,string: "{actual}"'
                )
            )
            return
    elif (declared := schema.get("type")) and not _matches_type(declared, actual):
        errors.append(
            FieldError.invalid(
                path, actual, f'{_in_body(path)} must be of type {declared}: "{actual}"'
            )
        )
        return

    _check_enum(schema, value, path, errors)
    if actual in ("integer", "number"):
        _check_number(schema, value, path, errors)
    elif actual == "string":
        _check_string(schema, value, path, errors)
    elif actual == "array":
        _check_array(schema, value, path, errors)
    elif actual == "object":
        _check_object(schema, value, path, errors, root=root)


def _check_enum(schema: Schema, value: Any, path: Path, errors: list[FieldError]) -> None:
    enum = schema.get("enum")
    if enum is None or value in enum:
        return
    supported = [e if isinstance(e, str) else json.dumps(e) for e in enum]
    errors.append(FieldError.not_supported(path, value, supported))


def _check_number(schema: Schema, value: float, path: Path, errors: list[FieldError]) -> None:
    shown = int(value) if isinstance(value, float) and value.is_integer() else value
    minimum = schema.get("minimum")
    if minimum is not None:
        if schema.get("exclusiveMinimum"):
            if value <= minimum:
                errors.append(
                    FieldError.invalid(
                        path,
                        shown,
                        f"{_in_body(path)} should be greater than {_number_text(minimum)}",
                    )
                )
        elif value < minimum:
            errors.append(
                FieldError.invalid(
                    path,
                    shown,
                    f"{_in_body(path)} should be greater than or equal to {_number_text(minimum)}",
                )
            )
    maximum = schema.get("maximum")
    if maximum is not None:
        if schema.get("exclusiveMaximum"):
            if value >= maximum:
                errors.append(
                    FieldError.invalid(
                        path, shown, f"{_in_body(path)} should be less than {_number_text(maximum)}"
                    )
                )
        elif value > maximum:
            errors.append(
                FieldError.invalid(
                    path,
                    shown,
                    f"{_in_body(path)} should be less than or equal to {_number_text(maximum)}",
                )
            )
    multiple = schema.get("multipleOf")
    if multiple and (value / multiple) != int(value / multiple):
        errors.append(
            FieldError.invalid(
                path, shown, f"{_in_body(path)} should be a multiple of {_number_text(multiple)}"
            )
        )
    fmt = schema.get("format")
    bounds = {"int32": 2**31, "int64": 2**63}.get(fmt or "")
    if bounds and not -bounds <= value < bounds:
        errors.append(
            FieldError.invalid(path, shown, f"{_in_body(path)} must be of type {fmt}: {shown}")
        )


def _check_string(schema: Schema, value: str, path: Path, errors: list[FieldError]) -> None:
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        errors.append(
            FieldError(ErrorType.TOO_LONG, str(path), f"may not be longer than {max_length}")
        )
    min_length = schema.get("minLength")
    if min_length is not None and len(value) < min_length:
        errors.append(
            FieldError.invalid(
                path, value, f"{_in_body(path)} should be at least {min_length} chars long"
            )
        )
    pattern = schema.get("pattern")
    if pattern is not None and not _pattern(pattern).search(value):
        errors.append(FieldError.invalid(path, value, f"{_in_body(path)} should match '{pattern}'"))


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(pattern: str) -> re.Pattern[str]:
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        compiled = _PATTERNS[pattern] = re.compile(pattern)
    return compiled


def _check_array(schema: Schema, value: list[Any], path: Path, errors: list[FieldError]) -> None:
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        errors.append(FieldError.too_many(path, len(value), max_items))
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        errors.append(
            FieldError.invalid(
                path, len(value), f"{_in_body(path)} should have at least {min_items} items"
            )
        )
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _validate(items, item, path.index(i), errors)
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set" or schema.get("uniqueItems"):
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                errors.append(FieldError.duplicate(path.index(i), item))
            else:
                seen.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: list[dict[str, Any]] = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = {k: item.get(k) for k in keys}
            if key in seen_keys:
                errors.append(FieldError.duplicate(path.index(i), key))
            else:
                seen_keys.append(key)


def _check_object(
    schema: Schema, value: dict[str, Any], path: Path, errors: list[FieldError], *, root: bool
) -> None:
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(FieldError.required(path.child(name), ""))
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, child in value.items():
        if root and (key in _TYPE_META or key == "metadata"):
            continue
        if key in properties:
            _validate(properties[key], child, path.child(key), errors)
        elif isinstance(additional, dict):
            _validate(additional, child, path.child(key), errors)
    max_props = schema.get("maxProperties")
    if max_props is not None and len(value) > max_props:
        errors.append(FieldError.too_many(path, len(value), max_props))
    min_props = schema.get("minProperties")
    if min_props is not None and len(value) < min_props:
        errors.append(
            FieldError.invalid(
                path,
                len(value),
                f"{_in_body(path)} should have at least {min_props} properties",
            )
        )


# --------------------------------------------------------------------------------------------
# structural check


def is_structural(schema: Schema) -> list[str]:
    """Why the schema is not structural (empty when it is), with paths under the schema root.

    The CRD's 422 is built from these, e.g. `properties[spec].type: Required value: must not be
    empty for specified object fields`.
    """
    problems = list(_structural(schema, "", root=True))
    if schema.get("type") != "object":
        problems.insert(
            0,
            'type: Unsupported value: "{}": supported values: "object"'.format(
                schema.get("type", "")
            ),
        )
    return problems


def _structural(schema: Schema, at: str, *, root: bool = False) -> Iterator[str]:
    prefix = f"{at}." if at else ""
    typed = "type" in schema
    exempt = schema.get(PRESERVE) or schema.get(INT_OR_STRING)
    if not typed and not exempt and not root:
        yield f"{prefix}type: Required value: must not be empty for specified object fields"
    if schema.get("properties") and isinstance(schema.get("additionalProperties"), dict):
        yield (
            f"{prefix}additionalProperties: Forbidden: additionalProperties and properties are "
            "mutual exclusive"
        )
    if schema.get("type") == "array" and not isinstance(schema.get("items"), dict):
        yield f"{prefix}items: Required value: must be specified"
    for key, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict):
            yield from _structural(prop, f"{prefix}properties[{key}]")
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _structural(items, f"{prefix}items")
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        yield from _structural(additional, f"{prefix}additionalProperties")
