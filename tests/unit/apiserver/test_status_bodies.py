"""Status bodies in metav1.Status's Go field order, empties omitted, as kube-apiserver writes."""

from __future__ import annotations

import json

import pytest

from localcluster.apiserver.errors import (
    already_exists,
    failure_status,
    invalid,
    status_details,
    success_status,
)


def encoded(body: object) -> str:
    return json.dumps(body, separators=(",", ":"))


@pytest.mark.parametrize(
    ("details", "expected"),
    [
        (
            {"kind": "jobs", "group": "batch", "name": "a"},
            '{"name":"a","group":"batch","kind":"jobs"}',
        ),
        (
            {"kind": "configmaps", "group": "", "name": "a", "uid": None},
            '{"name":"a","kind":"configmaps"}',
        ),
        (
            {
                "causes": [{"field": "spec", "message": "m", "reason": "FieldValueInvalid"}],
                "name": "a",
            },
            '{"name":"a","causes":[{"reason":"FieldValueInvalid","message":"m","field":"spec"}]}',
        ),
        ({"causes": [{"message": "m", "field": ""}]}, '{"causes":[{"message":"m"}]}'),
    ],
)
def test_status_details_order(details: dict[str, object], expected: str) -> None:
    assert encoded(status_details(details)) == expected


def test_failure_status_puts_code_last_and_omits_an_empty_reason() -> None:
    assert encoded(failure_status(500, "", "boom")) == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"boom",'
        '"code":500}'
    )
    assert encoded(already_exists("deployments", "web", "apps").to_status()) == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"deployments.apps \\"web\\" already exists","reason":"AlreadyExists",'
        '"details":{"name":"web","group":"apps","kind":"deployments"},"code":409}'
    )


def test_invalid_lists_causes_in_go_order() -> None:
    status = invalid(
        "Job",
        "j",
        [{"field": "spec.x", "message": "spec.x: bad", "reason": "FieldValueInvalid"}],
        "batch",
    ).to_status()
    assert list(status["details"]) == ["name", "group", "kind", "causes"]
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": "bad", "field": "spec.x"}
    ]


def test_success_status_has_no_code_unless_given() -> None:
    assert encoded(success_status({"name": "a", "kind": "configmaps", "uid": "u"})) == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
        '"details":{"name":"a","kind":"configmaps","uid":"u"}}'
    )
