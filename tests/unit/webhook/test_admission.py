"""The admission core every review shares: the answers' wire shape, one table per builder."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from shared.fielderrors import FieldError, Path
from webhook.admission import (
    ADMISSION_V1,
    Result,
    allow,
    deny,
    encode_patch,
    object_name,
    refuse,
    respond,
)

V1BETA1 = {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("admission.k8s.io/v1", "admission.k8s.io/v1"),
        ("admission.k8s.io/v1beta1", "admission.k8s.io/v1beta1"),
        ("admission.k8s.io/v2", ADMISSION_V1),
        (None, ADMISSION_V1),
    ],
)
def test_the_answer_speaks_the_reviews_version_when_it_can(
    version: str | None, expected: str
) -> None:
    answer = respond({"apiVersion": version}, "u1", {"allowed": True}, Result.ALLOWED)
    assert answer.status == 200
    assert answer.body == {
        "apiVersion": expected,
        "kind": "AdmissionReview",
        "response": {"uid": "u1", "allowed": True},
    }


def test_allow_carries_a_patch_and_warnings_only_when_there_are_some() -> None:
    assert allow(V1BETA1, "u").body["response"] == {"uid": "u", "allowed": True}
    patch = encode_patch([{"op": "add", "path": "/spec/queue", "value": "default"}])
    answer = allow(V1BETA1, "u", ["careful"], patch)
    assert answer.result is Result.ALLOWED
    assert answer.warnings == ["careful"]
    response = answer.body["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/spec/queue", "value": "default"}
    ]
    assert response["warnings"] == ["careful"]


def test_no_operation_is_no_patch() -> None:
    assert encode_patch([]) == ""


@pytest.mark.parametrize(("code", "reason"), [(400, "BadRequest"), (500, "InternalError")])
def test_refuse_names_no_field(code: int, reason: str) -> None:
    answer = refuse(V1BETA1, "u", "expected resource jobs", code)
    assert answer.result is Result.DENIED
    assert answer.body["response"] == {
        "uid": "u",
        "allowed": False,
        "status": {
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": "expected resource jobs",
        },
    }


@pytest.mark.parametrize(
    ("request_", "name"),
    [
        ({"object": {"metadata": {"name": "new"}}, "name": "req"}, "new"),
        ({"object": {"metadata": {}}, "oldObject": {"metadata": {"name": "old"}}}, "old"),
        ({"oldObject": None, "name": "req"}, "req"),
        ({"object": "not an object"}, ""),
    ],
)
def test_object_name(request_: dict[str, Any], name: str) -> None:
    assert object_name(request_) == name


def test_deny_is_a_422_with_every_field_error_as_a_cause() -> None:
    errors = [
        FieldError.required(Path.of("spec").child("tasks")),
        FieldError.invalid(Path.of("spec").child("minAvailable"), -1, "must be >= 0"),
    ]
    request = {"object": {"metadata": {"name": "j"}}}
    answer = deny(
        V1BETA1, "u", request, errors, group="batch.volcano.sh", kind="Job", warnings=["w"]
    )
    assert answer.result is Result.DENIED
    response = answer.body["response"]
    assert response["allowed"] is False
    assert response["warnings"] == ["w"]
    status = response["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["details"]["name"] == "j"
    assert (status["details"]["group"], status["details"]["kind"]) == ("batch.volcano.sh", "Job")
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.tasks", "spec.minAvailable"]
    assert "spec.tasks" in status["message"] and "spec.minAvailable" in status["message"]
