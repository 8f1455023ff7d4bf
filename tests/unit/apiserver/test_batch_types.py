"""Defaults, validation and table rows of batch/v1 Jobs and CronJobs, ReplicationControllers
and APIServices, each rule imported directly."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from localcluster.apiserver.defaults import job_defaults, replication_controller_defaults
from localcluster.apiserver.tables import BUILTIN_COLUMNS
from localcluster.apiserver.validation import validate_builtin_spec

CONTAINERS = [{"name": "c", "image": "busybox"}]


def job_spec(**extra: Any) -> dict[str, Any]:
    return {"template": {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}, **extra}


def errors(group: str, plural: str, obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_builtin_spec(group, plural, obj)]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (job_spec(), []),
        (
            {"template": {"spec": {"restartPolicy": "Always", "containers": CONTAINERS}}},
            [
                'spec.template.spec.restartPolicy: Unsupported value: "Always": supported '
                'values: "OnFailure", "Never"'
            ],
        ),
        (
            job_spec(parallelism=-1),
            ["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            {"template": {"spec": {"restartPolicy": "Never"}}},
            ["spec.template.spec.containers: Required value"],
        ),
        (
            job_spec(manualSelector=True, selector={"matchLabels": {"a": "b"}}),
            [
                'spec.template.metadata.labels: Invalid value: "": `selector` does not match '
                "template `labels`"
            ],
        ),
    ],
)
def test_job_validation(spec: dict[str, Any], expected: list[str]) -> None:
    assert errors("batch", "jobs", {"spec": spec}) == expected


@pytest.mark.parametrize(
    ("schedule", "policy", "expected"),
    [
        ("*/5 * * * *", "Allow", []),
        ("@hourly", "Forbid", []),
        ("", "Allow", ["spec.schedule: Required value"]),
        (
            "61 * * * *",
            "Allow",
            ["spec.schedule: Invalid value: \"61 * * * *\": minute '61' is beyond the range 0-59"],
        ),
        (
            "TZ=UTC * * * * *",
            "Allow",
            [
                'spec.schedule: Invalid value: "TZ=UTC * * * * *": cannot use TZ or CRON_TZ in '
                "schedule, use timeZone field instead"
            ],
        ),
        (
            "* * * * *",
            "Sometimes",
            [
                'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: '
                '"Allow", "Forbid", "Replace"'
            ],
        ),
    ],
)
def test_cronjob_validation(schedule: str, policy: str, expected: list[str]) -> None:
    obj = {
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": policy,
            "jobTemplate": {"spec": job_spec()},
        }
    }
    assert errors("batch", "cronjobs", obj) == expected


def test_replication_controller_selector_must_match_its_template() -> None:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": CONTAINERS}}
    ok = {"spec": {"selector": {"app": "a"}, "template": template}}
    assert errors("", "replicationcontrollers", ok) == []
    bad = {"spec": {"selector": {"app": "b"}, "template": template}}
    assert errors("", "replicationcontrollers", bad) == [
        'spec.template.metadata.labels: Invalid value: "app=a": `selector` does not match '
        "template `labels`"
    ]
    assert errors("", "replicationcontrollers", {"spec": {"selector": {"app": "a"}}}) == [
        "spec.template: Required value"
    ]


@pytest.mark.parametrize(
    ("name", "spec", "expected"),
    [
        ("v1.example.com", {"group": "example.com", "version": "v1"}, []),
        (
            "v2.example.com",
            {"group": "example.com", "version": "v1"},
            ['metadata.name: Invalid value: "v2.example.com": must be v1.example.com'],
        ),
        (
            "v1.example.com",
            {"group": "example.com", "version": "v1", "versionPriority": 0},
            ["spec.versionPriority: Invalid value: 0: must be positive and non-zero"],
        ),
    ],
)
def test_api_service_validation(name: str, spec: dict[str, Any], expected: list[str]) -> None:
    full = {"groupPriorityMinimum": 100, "versionPriority": 10, **spec}
    obj = {"metadata": {"name": name}, "spec": full}
    assert errors("apiregistration.k8s.io", "apiservices", obj) == expected


def test_job_defaults_select_pods_by_uid_once_it_is_known() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "pi"}, "spec": job_spec()}
    job_defaults(obj, obj["spec"])
    assert "selector" not in obj["spec"]  # no uid yet: the second defaulting pass adds it
    assert (obj["spec"]["completions"], obj["spec"]["parallelism"]) == (1, 1)
    obj["metadata"]["uid"] = "u"
    job_defaults(obj, obj["spec"])
    assert obj["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}}
    assert obj["spec"]["template"]["metadata"]["labels"]["job-name"] == "pi"
    work_queue: dict[str, Any] = {"metadata": {}, "spec": job_spec(parallelism=3)}
    job_defaults(work_queue, work_queue["spec"])
    assert "completions" not in work_queue["spec"]


def test_replication_controller_defaults_come_from_the_template() -> None:
    obj: dict[str, Any] = {
        "metadata": {},
        "spec": {"template": {"metadata": {"labels": {"app": "a"}}, "spec": {}}},
    }
    replication_controller_defaults(obj, obj["spec"])
    assert obj["spec"]["selector"] == {"app": "a"}
    assert obj["metadata"]["labels"] == {"app": "a"}
    assert obj["spec"]["replicas"] == 1


@pytest.mark.parametrize(
    ("status", "spec", "cells"),
    [
        ({}, {"completions": 1}, ["Running", "0/1", ""]),
        (
            {
                "succeeded": 2,
                "startTime": "2026-01-01T00:00:00Z",
                "completionTime": "2026-01-01T00:00:07Z",
                "conditions": [{"type": "Complete", "status": "True"}],
            },
            {"completions": 2},
            ["Complete", "2/2", "7s"],
        ),
        (
            {"conditions": [{"type": "Failed", "status": "True"}]},
            {"parallelism": 3},
            ["Failed", "0/1 of 3", ""],
        ),
    ],
)
def test_job_rows(status: dict[str, Any], spec: dict[str, Any], cells: list[str]) -> None:
    columns, row = BUILTIN_COLUMNS[("batch", "jobs")]
    assert [c["name"] for c in columns[:5]] == ["Name", "Status", "Completions", "Duration", "Age"]
    job = {"metadata": {"name": "pi", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": spec}
    job["status"] = status
    now = dt.datetime(2026, 1, 1, 0, 1, tzinfo=dt.UTC)
    assert row(job, now)[1:4] == cells
