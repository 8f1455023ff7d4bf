"""Names: the job's, its tasks', the pod names they make, and the names the spec refers to."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.webhook.job.rules.jobspecs import SPEC, found, spec, task
from webhook.job.rules.names import (
    job_name,
    validate_job_name,
    validate_mutable_names,
    validate_spec_names,
    validate_task_names,
)


@pytest.mark.parametrize(
    ("metadata", "name", "fields"),
    [
        pytest.param({"name": "train"}, "train", [], id="name"),
        pytest.param({"name": "Train"}, None, ["metadata.name"], id="bad-name"),
        pytest.param({"generateName": "train-"}, "train-xxxxx", [], id="generate-name"),
        pytest.param({"generateName": "Train-"}, None, ["metadata.generateName"], id="bad-gen"),
        pytest.param({}, None, ["metadata.name"], id="missing"),
    ],
)
def test_job_name(metadata: dict[str, Any], name: str | None, fields: list[str]) -> None:
    assert job_name(metadata)[0] == name
    assert [e.field for e in validate_job_name(metadata)] == fields


def test_a_missing_name_says_how_to_name_the_job() -> None:
    assert found(validate_job_name({})) == [("metadata.name", "name or generateName is required")]


@pytest.mark.parametrize(
    ("tasks", "job", "expected"),
    [
        pytest.param([task("a"), task("b")], "j", [], id="ok"),
        pytest.param(
            [],
            "j",
            [("spec.tasks", "No task specified in job spec: at least one task is required")],
            id="no-task",
        ),
        pytest.param(
            [task("a"), task("a")],
            "j",
            [("spec.tasks[1].name", "duplicated task name")],
            id="duplicate",
        ),
        pytest.param([task("A")], "j", [("spec.tasks[0].name", "")], id="not-a-label"),
        pytest.param(
            [task("w" * 40, replicas=10)],
            "j" * 22,
            [
                (
                    "spec.tasks[0].name",
                    f'the pod name "{"j" * 22}-{"w" * 40}-9" (job name, task name and highest '
                    "index) must be a DNS-1123 label: must be no more than 63 characters",
                )
            ],
            id="pod-name-too-long",
        ),
        pytest.param([task("w" * 40, replicas=10)], None, [], id="no-job-name-no-pod-check"),
    ],
)
def test_validate_task_names(
    tasks: list[dict[str, Any]], job: str | None, expected: list[tuple[str, str]]
) -> None:
    errors = validate_task_names(spec(*tasks), SPEC, job)
    if expected and expected[0][1] == "":
        assert [e.field for e in errors] == [expected[0][0]]
    else:
        assert found(errors) == expected


@pytest.mark.parametrize(
    ("fields", "bad"),
    [
        pytest.param({"queue": "q", "schedulerName": "volcano"}, [], id="ok"),
        pytest.param({"queue": "Q_"}, ["spec.queue"], id="queue"),
        pytest.param({"schedulerName": "a..b"}, ["spec.schedulerName"], id="scheduler"),
        pytest.param({"priorityClassName": "-x"}, ["spec.priorityClassName"], id="priority"),
    ],
)
def test_validate_spec_names(fields: dict[str, Any], bad: list[str]) -> None:
    assert [e.field for e in validate_spec_names(spec(task(), **fields), SPEC)] == bad


def test_validate_mutable_names() -> None:
    volumes = [
        {"mountPath": "/a", "volumeClaimName": "ok"},
        {"mountPath": "/b", "volumeClaimName": "No"},
    ]
    errors = validate_mutable_names(spec(task(), priorityClassName="P", volumes=volumes), SPEC)
    assert [e.field for e in errors] == [
        "spec.priorityClassName",
        "spec.volumes[1].volumeClaimName",
    ]
