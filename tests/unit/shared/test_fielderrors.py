"""Field paths and errors render like apimachinery's field.ErrorList."""

from __future__ import annotations

import pytest

from shared.fielderrors import ErrorType, FieldError, Path, render

TASKS = Path.of("spec", "tasks")


def test_paths_render_in_kubernetes_form() -> None:
    assert str(TASKS.index(1).child("policies").index(0).child("event")) == (
        "spec.tasks[1].policies[0].event"
    )
    assert str(Path.of("spec", "plugins").key("mpi")) == "spec.plugins[mpi]"
    assert str(Path()) == ""


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (
            FieldError.required(TASKS, "at least one task"),
            "spec.tasks: Required value: at least one task",
        ),
        (
            FieldError.invalid(TASKS.index(0).child("replicas"), -1, "must be >= 0"),
            "spec.tasks[0].replicas: Invalid value: -1: must be >= 0",
        ),
        (
            FieldError.duplicate(TASKS.index(1).child("name"), "worker"),
            'spec.tasks[1].name: Duplicate value: "worker"',
        ),
        (
            FieldError.not_supported(Path.of("spec", "x"), "b", ["a", "c"]),
            'spec.x: Unsupported value: "b": supported values: "a", "c"',
        ),
        (
            FieldError.forbidden(Path.of("spec", "queue"), "immutable"),
            "spec.queue: Forbidden: immutable",
        ),
        (FieldError.too_long(Path.of("s"), 10), "s: Too long: must have at most 10 bytes"),
        (FieldError.too_many(Path.of("r"), 21, 20), "r: Too many: 21: must have at most 20 items"),
    ],
)
def test_error_text(error: FieldError, text: str) -> None:
    assert str(error) == text


def test_cause_and_joined_message() -> None:
    errors = [
        FieldError.required(Path.of("a")),
        FieldError.invalid(Path.of("b"), "x", "bad"),
    ]
    assert render(errors) == 'a: Required value; b: Invalid value: "x": bad'
    assert errors[1].as_cause() == {
        "field": "b",
        "reason": ErrorType.INVALID.value,
        "message": 'Invalid value: "x": bad',
    }
