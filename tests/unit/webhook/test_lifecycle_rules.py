"""Admission of the lifecycle fields: `spec.activeDeadlineSeconds` (> 0, only lowered once the
job ran) and `spec.retryPolicy` (bounds, cap not below base), on CREATE and UPDATE."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.job.create import validate_create
from webhook.job.rules import lifecycle, wording
from webhook.job.update import validate_update
from webhook.settings import Settings

SETTINGS = Settings()


def job(phase: str | None = None, **spec: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
            **spec,
        },
    }
    if phase is not None:
        raw["status"] = {"state": {"phase": phase}}
    return raw


CREATE: list[tuple[str, dict[str, Any], list[str]]] = [
    ("a Volcano job", {}, []),
    ("a deadline", {"activeDeadlineSeconds": 60}, []),
    (
        "a zero deadline",
        {"activeDeadlineSeconds": 0},
        ["spec.activeDeadlineSeconds: Invalid value: 0: should be greater than or equal to 1"],
    ),
    (
        "a full retry policy",
        {
            "retryPolicy": {
                "infrastructureRetries": 5,
                "backoff": {"baseSeconds": 5, "capSeconds": 60},
            }
        },
        [],
    ),
    (
        "negative infrastructure retries",
        {"retryPolicy": {"infrastructureRetries": -1}},
        [
            "spec.retryPolicy.infrastructureRetries: Invalid value: "
            "-1: should be greater than or equal to 0"
        ],
    ),
    (
        "a cap below the base",
        {"retryPolicy": {"backoff": {"baseSeconds": 30, "capSeconds": 10}}},
        [
            "spec.retryPolicy.backoff.capSeconds: Invalid value: "
            "10: must not be less than baseSeconds (30)"
        ],
    ),
]


@pytest.mark.parametrize(("why", "spec", "errors"), CREATE, ids=[x[0] for x in CREATE])
def test_create(why: str, spec: dict[str, Any], errors: list[str]) -> None:
    assert [str(e) for e in validate_create(job(**spec), None, SETTINGS)] == errors


UPDATE: list[tuple[str, str, dict[str, Any], dict[str, Any], list[str]]] = [
    (
        "lowered while running",
        "Running",
        {"activeDeadlineSeconds": 60},
        {"activeDeadlineSeconds": 30},
        [],
    ),
    (
        "raised while running",
        "Running",
        {"activeDeadlineSeconds": 60},
        {"activeDeadlineSeconds": 90},
        [
            "spec.activeDeadlineSeconds: Invalid value: "
            "90: may only be lowered once the job ran (it is 60s)"
        ],
    ),
    (
        "removed while running",
        "Running",
        {"activeDeadlineSeconds": 60},
        {},
        ["spec.activeDeadlineSeconds: Forbidden: cannot be removed once the job ran (Running)"],
    ),
    ("set on a running job without one", "Running", {}, {"activeDeadlineSeconds": 90}, []),
    (
        "raised while still Pending",
        "Pending",
        {"activeDeadlineSeconds": 60},
        {"activeDeadlineSeconds": 90},
        [],
    ),
    (
        "raised while suspended",
        "Aborted",
        {"activeDeadlineSeconds": 60},
        {"activeDeadlineSeconds": 90},
        [
            "spec.activeDeadlineSeconds: Invalid value: "
            "90: may only be lowered once the job ran (it is 60s)"
        ],
    ),
    (
        "the retry policy changes",
        "Running",
        {"retryPolicy": {"infrastructureRetries": 1}},
        {"retryPolicy": {"infrastructureRetries": 9}},
        [],
    ),
    (
        "a cap below the base on update",
        "Running",
        {},
        {"retryPolicy": {"backoff": {"baseSeconds": 9, "capSeconds": 1}}},
        [
            "spec.retryPolicy.backoff.capSeconds: Invalid value: "
            "1: must not be less than baseSeconds (9)"
        ],
    ),
]


@pytest.mark.parametrize(
    ("why", "phase", "old_spec", "new_spec", "errors"), UPDATE, ids=[x[0] for x in UPDATE]
)
def test_update(
    why: str, phase: str, old_spec: dict[str, Any], new_spec: dict[str, Any], errors: list[str]
) -> None:
    old = job(phase, **old_spec)
    new = job(phase, **new_spec)
    assert [str(e) for e in validate_update(new, old, SETTINGS)] == errors


def test_other_fields_stay_immutable() -> None:
    old = job("Running", activeDeadlineSeconds=60)
    new = copy.deepcopy(old)
    new["spec"]["queue"] = "other"
    assert [str(e) for e in validate_update(new, old, SETTINGS)] == [
        f'spec.queue: Invalid value: "other": {wording.IMMUTABLE}'
    ]


def test_without_mutable_drops_only_the_lifecycle_fields() -> None:
    raw = {"spec": {"activeDeadlineSeconds": 5, "retryPolicy": {}, "queue": "q"}}
    assert lifecycle.without_mutable(raw) == {"spec": {"queue": "q"}}
    assert raw["spec"]["activeDeadlineSeconds"] == 5
