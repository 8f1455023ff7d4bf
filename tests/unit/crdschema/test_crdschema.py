"""Structural schema pruning, defaulting and validation, worded like kube-apiserver."""

# ruff: noqa: E501

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster.apiserver.crdschema import (
    apply_schema_defaults,
    is_structural,
    prune_unknown_fields,
    validate_against_schema,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["image"],
            "properties": {
                "image": {"type": "string", "minLength": 1, "maxLength": 10},
                "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 10},
                "ratio": {
                    "type": "number",
                    "exclusiveMinimum": True,
                    "minimum": 0,
                    "exclusiveMaximum": True,
                    "maximum": 1,
                },
                "mode": {"type": "string", "enum": ["a", "b"]},
                "name": {"type": "string", "pattern": "^[a-z]+$"},
                "port": {"x-kubernetes-int-or-string": True},
                "enabled": {"type": "boolean"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": 2,
                    "x-kubernetes-list-type": "set",
                },
                "tasks": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "default": "main"},
                            "policy": {
                                "type": "object",
                                "default": {},
                                "properties": {"action": {"type": "string", "default": "Restart"}},
                            },
                        },
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "embedded": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "properties": {"x": {"type": "string"}}}
                    },
                },
                "optional": {"type": "string", "nullable": True},
                "queue": {"type": "string", "default": "default"},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


def obj(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": spec}


VALIDATION_CASES = [
    pytest.param({"image": "busybox"}, [], id="valid object has no errors"),
    pytest.param({}, ["spec.image: Required value"], id="required field missing is Required value"),
    pytest.param(
        {"image": "i", "replicas": "3"},
        [
            'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'
        ],
        id="wrong type names the expected and actual types",
    ),
    pytest.param(
        {"image": "i", "replicas": -1},
        [
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
        ],
        id="minimum",
    ),
    pytest.param(
        {"image": "i", "replicas": 11},
        [
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        ],
        id="maximum",
    ),
    pytest.param(
        {"image": "i", "ratio": 0},
        ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"],
        id="exclusive minimum",
    ),
    pytest.param(
        {"image": "i", "ratio": 1.0},
        ["spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"],
        id="exclusive maximum",
    ),
    pytest.param({"image": "i", "ratio": 0.5}, [], id="number accepts a float"),
    pytest.param({"image": "i", "replicas": 2.0}, [], id="integral float is an integer"),
    pytest.param(
        {"image": "i", "replicas": 2**40},
        [
            f"spec.replicas: Invalid value: {2**40}: spec.replicas in body should be less than or equal to 10",
            f"spec.replicas: Invalid value: {2**40}: spec.replicas in body must be of type int32: {2**40}",
        ],
        id="int32 format bounds",
    ),
    pytest.param(
        {"image": "i", "mode": "c"},
        ['spec.mode: Unsupported value: "c": supported values: "a", "b"'],
        id="enum",
    ),
    pytest.param(
        {"image": "i", "name": "Abc"},
        ["spec.name: Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'"],
        id="pattern",
    ),
    pytest.param(
        {"image": ""},
        ['spec.image: Invalid value: "": spec.image in body should be at least 1 chars long'],
        id="minLength",
    ),
    pytest.param(
        {"image": "12345678901"},
        ["spec.image: Too long: may not be longer than 10"],
        id="maxLength",
    ),
    pytest.param({"image": "i", "port": 80}, [], id="int-or-string takes an integer"),
    pytest.param({"image": "i", "port": "http"}, [], id="int-or-string takes a string"),
    pytest.param(
        {"image": "i", "port": True},
        [
            'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'
        ],
        id="int-or-string rejects a boolean",
    ),
    pytest.param(
        {"image": "i", "enabled": 1},
        [
            'spec.enabled: Invalid value: "integer": spec.enabled in body must be of type boolean: "integer"'
        ],
        id="boolean is not an integer",
    ),
    pytest.param(
        {"image": "i", "tags": []},
        ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"],
        id="minItems",
    ),
    pytest.param(
        {"image": "i", "tags": ["a", "b", "c"]},
        ["spec.tags: Too many: 3: must have at most 2 items"],
        id="maxItems",
    ),
    pytest.param(
        {"image": "i", "tags": ["a", "a"]},
        ['spec.tags[1]: Duplicate value: "a"'],
        id="list-type set rejects duplicates",
    ),
    pytest.param(
        {"image": "i", "tasks": [{"name": 3}]},
        [
            'spec.tasks[0].name: Invalid value: "integer": spec.tasks[0].name in body must be of type string: "integer"'
        ],
        id="array item paths use brackets",
    ),
    pytest.param(
        {"image": "i", "labels": {"a": 1}},
        [
            'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"'
        ],
        id="additionalProperties schema validates map values",
    ),
    pytest.param({"image": "i", "optional": None}, [], id="nullable accepts null"),
    pytest.param(
        {"image": None},
        ['spec.image: Invalid value: "null": spec.image in body must be of type string: "null"'],
        id="null is rejected when not nullable",
    ),
    pytest.param(
        {"image": "i", "template": {"anything": [1, {"x": None}]}},
        [],
        id="preserve-unknown-fields accepts anything",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), VALIDATION_CASES)
def test_validation(spec: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in validate_against_schema(SCHEMA, obj(spec))] == expected


def test_validation_reports_every_error_in_document_order() -> None:
    errors = validate_against_schema(SCHEMA, obj({"replicas": -1, "mode": "z"}))
    assert [e.field for e in errors] == ["spec.image", "spec.replicas", "spec.mode"]


PRUNE_CASES = [
    pytest.param(
        {"image": "i", "foo": 1}, {"image": "i"}, ["spec.foo"], id="unknown field dropped"
    ),
    pytest.param(
        {"image": "i", "tasks": [{"name": "a", "bar": 1}, {"baz": 2}]},
        {"image": "i", "tasks": [{"name": "a"}, {}]},
        ["spec.tasks[0].bar", "spec.tasks[1].baz"],
        id="unknown fields in list items",
    ),
    pytest.param(
        {"image": "i", "template": {"x": {"y": 1}}},
        {"image": "i", "template": {"x": {"y": 1}}},
        [],
        id="preserve-unknown-fields keeps everything",
    ),
    pytest.param(
        {"labels": {"any": "thing"}},
        {"labels": {"any": "thing"}},
        [],
        id="additionalProperties keeps map keys",
    ),
    pytest.param(
        {
            "embedded": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "junk": 1},
                "spec": {"x": "1", "y": 2},
                "other": 1,
            }
        },
        {
            "embedded": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"x": "1"},
            }
        },
        ["spec.embedded.metadata.junk", "spec.embedded.spec.y", "spec.embedded.other"],
        id="embedded resource keeps apiVersion kind and ObjectMeta",
    ),
]


@pytest.mark.parametrize(("spec", "pruned", "removed"), PRUNE_CASES)
def test_pruning(spec: dict[str, Any], pruned: dict[str, Any], removed: list[str]) -> None:
    o = obj(spec)
    assert prune_unknown_fields(SCHEMA, o) == removed
    assert o["spec"] == pruned


def test_pruning_keeps_type_meta_and_trims_root_metadata() -> None:
    o = obj({})
    o["metadata"]["labels"] = {"a": "b"}
    o["metadata"]["bogus"] = 1
    o["extra"] = True
    assert prune_unknown_fields(SCHEMA, o) == ["metadata.bogus", "extra"]
    assert o == {
        "apiVersion": "x.io/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "labels": {"a": "b"}},
        "spec": {},
    }


DEFAULT_CASES = [
    pytest.param({}, {"queue": "default"}, id="absent field takes its default"),
    pytest.param({"queue": "q"}, {"queue": "q"}, id="present field is kept"),
    pytest.param(
        {"queue": None}, {"queue": "default"}, id="null non-nullable field takes its default"
    ),
    pytest.param(
        {"queue": "q", "image": None},
        {"queue": "q"},
        id="null non-nullable field without default is dropped",
    ),
    pytest.param(
        {"queue": "q", "optional": None},
        {"queue": "q", "optional": None},
        id="null nullable field is kept",
    ),
    pytest.param(
        {"queue": "q", "tasks": [{}]},
        {"queue": "q", "tasks": [{"name": "main", "policy": {"action": "Restart"}}]},
        id="defaulted object is defaulted recursively",
    ),
    pytest.param(
        {"queue": "q", "tasks": [{"policy": {"action": "Stop"}}]},
        {"queue": "q", "tasks": [{"name": "main", "policy": {"action": "Stop"}}]},
        id="defaults inside list items",
    ),
]


@pytest.mark.parametrize(("spec", "defaulted"), DEFAULT_CASES)
def test_defaulting(spec: dict[str, Any], defaulted: dict[str, Any]) -> None:
    o = obj(spec)
    apply_schema_defaults(SCHEMA, o)
    assert o["spec"] == defaulted


def test_defaulting_does_not_create_absent_parents() -> None:
    o: dict[str, Any] = {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {}}
    apply_schema_defaults(SCHEMA, o)
    assert "spec" not in o


def test_defaults_are_copies() -> None:
    first, second = obj({"tasks": [{}]}), obj({"tasks": [{}]})
    apply_schema_defaults(SCHEMA, first)
    apply_schema_defaults(SCHEMA, second)
    first["spec"]["tasks"][0]["policy"]["action"] = "changed"
    assert second["spec"]["tasks"][0]["policy"]["action"] == "Restart"


STRUCTURAL_CASES = [
    pytest.param(SCHEMA, [], id="a structural schema has no problems"),
    pytest.param(
        {"type": "object", "properties": {"spec": {"properties": {}}}},
        ["properties[spec].type: Required value: must not be empty for specified object fields"],
        id="a property without a type",
    ),
    pytest.param(
        {"type": "object", "properties": {"l": {"type": "array"}}},
        ["properties[l].items: Required value: must be specified"],
        id="an array without items",
    ),
    pytest.param(
        {"type": "string"},
        ['type: Unsupported value: "string": supported values: "object"'],
        id="the root must be an object",
    ),
]


@pytest.mark.parametrize(("schema", "problems"), STRUCTURAL_CASES)
def test_is_structural(schema: dict[str, Any], problems: list[str]) -> None:
    assert is_structural(schema) == problems


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "image",
                    "replicas",
                    "tasks",
                    "name",
                    "x",
                    "labels",
                    "policy",
                    "template",
                    "tags",
                    "mode",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(spec=json_values)
def test_pruning_then_defaulting_then_validating_never_raises(spec: Any) -> None:
    o: dict[str, Any] = {"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {}, "spec": spec}
    original = copy.deepcopy(o)
    prune_unknown_fields(SCHEMA, o)
    apply_schema_defaults(SCHEMA, o)
    errors = validate_against_schema(SCHEMA, o)
    assert all(e.field.startswith("spec") for e in errors)
    assert o["apiVersion"] == original["apiVersion"]
