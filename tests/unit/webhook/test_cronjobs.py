"""CronJob admission: validation (every error with its field path) and defaulting, as tables,
and the review wrapper."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest

from webhook.admission import Kind
from webhook.cronjob.defaulting import defaulted, mutation_patch
from webhook.cronjob.review import answer
from webhook.cronjob.validation import validate_cronjob
from webhook.settings import Settings

SETTINGS = Settings()


def cronjob(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "ml"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "spec": {
                    "minAvailable": 1,
                    "tasks": [
                        {
                            "name": "worker",
                            "replicas": 1,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [{"name": "main", "image": "busybox"}],
                                }
                            },
                        }
                    ],
                }
            },
        },
    }
    for key, value in spec.items():
        if value is None:
            base["spec"].pop(key, None)
        else:
            base["spec"][key] = value
    return base


def named(name: str) -> dict[str, Any]:
    obj = cronjob()
    obj["metadata"]["name"] = name
    return obj


def with_template(change: dict[str, Any]) -> dict[str, Any]:
    obj = cronjob()
    obj["spec"]["jobTemplate"]["spec"].update(change)
    return obj


def bad_task(**task: Any) -> dict[str, Any]:
    obj = cronjob()
    obj["spec"]["jobTemplate"]["spec"]["tasks"][0].update(task)
    return obj


VALID = {
    "a five-field schedule": cronjob(),
    "@hourly": cronjob(schedule="@hourly"),
    "@every": cronjob(schedule="@every 1h30m"),
    "month and day names": cronjob(schedule="0 9 * JAN-MAR MON-FRI"),
    "an IANA time zone": cronjob(timeZone="Europe/Berlin"),
    "Etc/GMT+5": cronjob(timeZone="Etc/GMT+5"),
    "every policy knob": cronjob(
        concurrencyPolicy="Forbid",
        startingDeadlineSeconds=0,
        suspend=True,
        successfulJobsHistoryLimit=0,
        failedJobsHistoryLimit=5,
    ),
    "a 40-character name": named("a" * 40),
}

# object -> (field, fragment of the message)
INVALID: dict[str, tuple[dict[str, Any], str, str]] = {
    "no schedule": (cronjob(schedule=None), "spec.schedule", "schedule is required"),
    "empty schedule": (cronjob(schedule=""), "spec.schedule", "schedule is required"),
    "TZ in the schedule": (
        cronjob(schedule="CRON_TZ=UTC 0 * * * *"),
        "spec.schedule",
        "should not contain TZ",
    ),
    "six fields": (cronjob(schedule="0 * * * * *"), "spec.schedule", "not a valid cron"),
    "out of range": (cronjob(schedule="61 * * * *"), "spec.schedule", "not a valid cron"),
    "an unknown macro": (cronjob(schedule="@fortnightly"), "spec.schedule", "not a valid cron"),
    "February 31st": (cronjob(schedule="0 0 31 2 *"), "spec.schedule", "not a valid cron"),
    "croniter's L extension": (cronjob(schedule="0 0 L * *"), "spec.schedule", "unknown name"),
    "croniter's # extension": (cronjob(schedule="0 0 * * 5#2"), "spec.schedule", "not a valid"),
    "empty time zone": (cronjob(timeZone=""), "spec.timeZone", "non-empty string"),
    "Local": (cronjob(timeZone="Local"), "spec.timeZone", "can't be Local"),
    "a made-up zone": (cronjob(timeZone="Mars/Olympus"), "spec.timeZone", "invalid timeZone"),
    "a path escape": (cronjob(timeZone="../etc/passwd"), "spec.timeZone", "unknown timeZone"),
    "a 53-character name": (named("a" * 53), "metadata.name", "no more than 52 characters"),
    "an uppercase name": (named("Nightly"), "metadata.name", "RFC 1123"),
    # 52 fits the Job name, but not the pod names `<job>-worker-0` of this template.
    "a 52-character name with long pod names": (
        named("a" * 52),
        "spec.jobTemplate.spec.tasks[0].name",
        "no more than 63 characters",
    ),
    "a negative deadline": (
        cronjob(startingDeadlineSeconds=-1),
        "spec.startingDeadlineSeconds",
        "greater than or equal to 0",
    ),
    "a negative history limit": (
        cronjob(failedJobsHistoryLimit=-2),
        "spec.failedJobsHistoryLimit",
        "greater than or equal to 0",
    ),
    "an unknown policy": (
        cronjob(concurrencyPolicy="Sometimes"),
        "spec.concurrencyPolicy",
        "supported values",
    ),
    "suspend as a string": (cronjob(suspend="yes"), "spec.suspend", "must be a boolean"),
    "no job template": (cronjob(jobTemplate=None), "spec.jobTemplate", "Required"),
    "template: duplicate task names": (
        with_template(
            {
                "tasks": [
                    *cronjob()["spec"]["jobTemplate"]["spec"]["tasks"],
                    *cronjob()["spec"]["jobTemplate"]["spec"]["tasks"],
                ]
            }
        ),
        "spec.jobTemplate.spec.tasks[1].name",
        "Duplicate",
    ),
    "template: minAvailable above the replicas": (
        with_template({"minAvailable": 5}),
        "spec.jobTemplate.spec.minAvailable",
        "",
    ),
    "template: a bad lifecycle policy event": (
        with_template({"policies": [{"event": "Sneezed", "action": "AbortJob"}]}),
        "spec.jobTemplate.spec.policies[0].event",
        "",
    ),
    "template: a negative replica count": (
        bad_task(replicas=-1),
        "spec.jobTemplate.spec.tasks[0].replicas",
        "",
    ),
}


@pytest.mark.parametrize("name", list(VALID))
def test_valid(name: str) -> None:
    assert validate_cronjob(VALID[name], SETTINGS) == []


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid(name: str) -> None:
    obj, field, fragment = INVALID[name]
    errors = validate_cronjob(obj, SETTINGS)
    assert any(e.field == field for e in errors), [str(e) for e in errors]
    assert any(fragment in str(e) for e in errors if e.field == field), [str(e) for e in errors]


def test_defaulting_fills_the_cronjob_and_its_template() -> None:
    obj = cronjob()
    out = defaulted(obj, SETTINGS)
    spec = out["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert spec["successfulJobsHistoryLimit"] == 3
    assert spec["failedJobsHistoryLimit"] == 1
    assert spec["jobTemplate"]["spec"]["queue"] == "default"
    assert spec["jobTemplate"]["spec"]["schedulerName"] == "volcano"
    assert obj == cronjob(), "the input is not modified"
    patched = jsonpatch.apply_patch(copy.deepcopy(obj), mutation_patch(obj, SETTINGS))
    assert patched == out


def test_defaulting_keeps_what_is_set() -> None:
    obj = cronjob(concurrencyPolicy="Replace", suspend=True, failedJobsHistoryLimit=0)
    spec = defaulted(obj, SETTINGS)["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["failedJobsHistoryLimit"]) == (
        "Replace",
        True,
        0,
    )


def _review(obj: dict[str, Any], operation: str = "CREATE") -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u1",
                "operation": operation,
                "resource": {
                    "group": "batch.volcano.sh",
                    "version": "v1alpha1",
                    "resource": "cronjobs",
                },
                "object": obj,
            },
        }
    ).encode()


def _no_queues() -> tuple[None, None]:
    return None, None


def test_review_denies_with_causes() -> None:
    result = answer(Kind.VALIDATE, _review(cronjob(schedule="nope")), SETTINGS, _no_queues)
    response = result.body["response"]
    assert response["allowed"] is False
    assert response["status"]["details"]["kind"] == "CronJob"
    assert response["status"]["details"]["causes"][0]["field"] == "spec.schedule"


def test_review_allows_updates_and_patches_creates() -> None:
    allowed = answer(Kind.VALIDATE, _review(cronjob(), "UPDATE"), SETTINGS, _no_queues)
    assert allowed.body["response"]["allowed"] is True
    mutated = answer(Kind.MUTATE, _review(cronjob()), SETTINGS, _no_queues)
    patch = json.loads(base64.b64decode(mutated.body["response"]["patch"]))
    assert {"op": "add", "path": "/spec/concurrencyPolicy", "value": "Allow"} in patch


def test_review_refuses_other_resources() -> None:
    body = json.loads(_review(cronjob()))
    body["request"]["resource"]["resource"] = "jobs"
    result = answer(Kind.VALIDATE, json.dumps(body).encode(), SETTINGS, _no_queues)
    assert result.body["response"]["allowed"] is False
    assert "cronjobs" in result.body["response"]["status"]["message"]
