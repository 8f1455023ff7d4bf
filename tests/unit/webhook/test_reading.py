"""Reading a raw Job: wrong types become field errors at their paths, the rest is still read,
and errors are ordered as their fields appear in the object."""

from __future__ import annotations

from typing import Any

import pytest

from shared.fielderrors import FieldError, Path
from webhook.job.reading import read_job, shown, sort_errors


def raw(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    tasks = [{"name": "w", "replicas": 1, "template": template}]
    return {"metadata": {"name": "j"}, "spec": {"tasks": tasks, **spec}}


@pytest.mark.parametrize(
    ("spec", "errors", "broken"),
    [
        pytest.param({}, [], set(), id="readable"),
        pytest.param(
            {"minAvailable": "two"},
            [("spec.minAvailable", "must be an integer")],
            {"spec.minAvailable"},
            id="wrong-type",
        ),
        pytest.param(
            {"plugins": {"svc": "yes"}},
            [("spec.plugins[svc]", "must be a list")],
            {"spec.plugins[svc]"},
            id="plugin-key-path",
        ),
        pytest.param(
            {"maxRetry": -1},
            [("spec.maxRetry", "should be greater than or equal to 0")],
            {"spec.maxRetry"},
            id="bound",
        ),
    ],
)
def test_read_job(spec: dict[str, Any], errors: list[tuple[str, str]], broken: set[str]) -> None:
    reading = read_job(raw(**spec))
    assert reading.job is not None
    assert [(e.field, e.detail) for e in reading.errors] == errors
    assert reading.broken == broken
    for path in broken:
        assert not reading.readable(Path((path,)))


def test_a_value_that_is_not_an_object_is_not_a_job() -> None:
    reading = read_job(["not", "a", "job"])
    assert reading.job is None
    assert [(e.field, e.detail) for e in reading.errors] == [("", "must be a Job object")]


def test_errors_follow_the_order_of_the_fields() -> None:
    obj = {"spec": {"queue": "q", "tasks": [{"name": "a"}, {"name": "b"}], "minAvailable": 1}}
    errors = [
        FieldError.invalid(Path.of("spec", "minAvailable"), 1, "x"),
        FieldError.invalid(Path.of("spec", "tasks").index(1).child("name"), "b", "x"),
        FieldError.invalid(Path.of("spec", "queue"), "q", "x"),
        FieldError.invalid(Path.of("spec", "tasks").index(0).child("name"), "a", "x"),
    ]
    assert [e.field for e in sort_errors(obj, errors)] == [
        "spec.queue",
        "spec.tasks[0].name",
        "spec.tasks[1].name",
        "spec.minAvailable",
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [({"a": 1}, "<object>"), ([1], "<list>"), ("x" * 200, "x" * 117 + "..."), (3, 3)],
)
def test_shown(value: Any, expected: Any) -> None:
    assert shown(value) == expected
