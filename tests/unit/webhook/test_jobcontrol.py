"""spec.suspend and spec.managedBy in the webhook: defaulting for Kueue's queue-name label, the
managedBy format on create and its immutability on update."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from shared import labels
from webhook.job.create import validate_create
from webhook.job.defaulting import default_job, mutation_patch
from webhook.job.rules import jobcontrol
from webhook.job.update import validate_update
from webhook.settings import Settings

SETTINGS = Settings()


def job(labels_: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "labels": labels_ or {}},
        "spec": {
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


QUEUED = {labels.KUEUE_QUEUE_NAME_KEY: "lq"}


@pytest.mark.parametrize(
    ("labels_", "spec", "expected"),
    [
        ({}, {}, None),  # Jobs without the label behave as before: no suspend field
        (QUEUED, {}, True),
        (QUEUED, {"suspend": False}, False),  # what the user wrote wins
        (QUEUED, {"suspend": True}, True),
        ({labels.KUEUE_QUEUE_NAME_KEY: ""}, {}, None),
    ],
)
def test_a_queued_job_is_created_suspended(
    labels_: dict[str, str], spec: dict[str, Any], expected: bool | None
) -> None:
    assert default_job(job(labels_, **spec), "volcano")["spec"].get("suspend") is expected


def test_the_patch_adds_suspend() -> None:
    patch = mutation_patch(job(QUEUED), "volcano")
    assert {"op": "add", "path": "/spec/suspend", "value": True} in patch


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, None),
        ("example.com/controller", None),
        (labels.MANAGED_BY_VCJOB, None),
        ("no-domain", "must be a domain-prefixed path"),
        ("example.com/" + "x" * 60, "at most 63"),
        (7, "must be a string"),
    ],
)
def test_managed_by_on_create(value: Any, problem: str | None) -> None:
    raw = job() if value is None else job(managedBy=value)
    found = [str(e) for e in jobcontrol.create_errors(raw)]
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith("spec.managedBy")
        assert problem in found[0]


def test_validate_create_reports_managed_by() -> None:
    found = [str(e) for e in validate_create(job(managedBy="nope"), None, SETTINGS)]
    assert any(e.startswith("spec.managedBy") for e in found)


def stored(**spec: Any) -> dict[str, Any]:
    out = default_job(job(**spec), "volcano")
    out["status"] = {"state": {"phase": "Running"}}
    return out


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (None, "example.com/other"),
        ("example.com/a", "example.com/b"),
        ("example.com/a", None),
    ],
)
def test_managed_by_is_immutable(old: str | None, new: str | None) -> None:
    before = stored() if old is None else stored(managedBy=old)
    after = copy.deepcopy(before)
    if new is None:
        after["spec"].pop("managedBy")
    else:
        after["spec"]["managedBy"] = new
    found = [str(e) for e in validate_update(after, before, SETTINGS)]
    assert len(found) == 1, found
    assert found[0].startswith("spec.managedBy") and "field is immutable" in found[0]


@pytest.mark.parametrize(("old", "new"), [(None, True), (True, False), (False, True)])
def test_suspend_is_mutable(old: bool | None, new: bool) -> None:
    before = stored() if old is None else stored(suspend=old)
    after = copy.deepcopy(before)
    after["spec"]["suspend"] = new
    assert validate_update(after, before, SETTINGS) == []
