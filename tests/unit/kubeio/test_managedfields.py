"""What the caches keep of managedFields, and what a write sends of it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeio.managedfields import drop_field_sets, without_managed_fields

ENTRY = {
    "manager": "vcjob-controller",
    "operation": "Update",
    "subresource": "status",
    "time": "2026-12-07T04:56:22Z",
    "fieldsType": "FieldsV1",
    "fieldsV1": {"f:status": {"f:state": {}}},
}
KEPT = {k: v for k, v in ENTRY.items() if k != "fieldsV1"}

DROPPED: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "each entry loses its field set, keeps who, how and when",
        {"metadata": {"name": "a", "managedFields": [ENTRY, ENTRY]}},
        {"metadata": {"name": "a", "managedFields": [KEPT, KEPT]}},
    ),
    ("no managedFields", {"metadata": {"name": "a"}}, {"metadata": {"name": "a"}}),
    ("no metadata", {"kind": "Status"}, {"kind": "Status"}),
    (
        "entries that are not objects stay",
        {"metadata": {"managedFields": ["x", None]}},
        {"metadata": {"managedFields": ["x", None]}},
    ),
    ("metadata that is not an object", {"metadata": "x"}, {"metadata": "x"}),
]


@pytest.mark.parametrize(("what", "obj", "expected"), DROPPED, ids=[r[0] for r in DROPPED])
def test_drop_field_sets(what: str, obj: dict[str, Any], expected: dict[str, Any]) -> None:
    given = copy.deepcopy(obj)
    assert drop_field_sets(given) is given
    assert given == expected


SENT: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "managedFields left out",
        {"metadata": {"name": "a", "managedFields": [KEPT]}, "status": {}},
        {"metadata": {"name": "a"}, "status": {}},
    ),
    ("nothing to leave out", {"metadata": {"name": "a"}}, {"metadata": {"name": "a"}}),
    ("no metadata", {"spec": {}}, {"spec": {}}),
]


@pytest.mark.parametrize(("what", "body", "expected"), SENT, ids=[r[0] for r in SENT])
def test_without_managed_fields(what: str, body: dict[str, Any], expected: dict[str, Any]) -> None:
    given = copy.deepcopy(body)
    assert without_managed_fields(given) == expected
    assert given == body  # the caller's object (a cached one) is not changed
