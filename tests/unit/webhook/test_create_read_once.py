"""A Job CREATE is defaulted once and read into the model once per request: by the mutating
webhook (whether or not it answers with the validation's problems, whether or not the memo knows
the spec) and by the validating one."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from shared import jsoncodec, labels
from shared.models import Job
from webhook.admission import Answer, Kind
from webhook.job import defaulting, review
from webhook.queueview import QueueView
from webhook.settings import Settings

SETTINGS = Settings(queue_check=False)
TEMPLATE: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
# Refused by the CRD's schema (`cpu: lots`), so the mutating webhook answers with every problem.
LOTS: dict[str, Any] = {
    "spec": {
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "lots"}}}
        ]
    }
}


def job(template: dict[str, Any], min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "minAvailable": min_available,
            "tasks": [{"name": "w", "replicas": 2, "template": template}],
        },
    }


def body(obj: dict[str, Any]) -> bytes:
    resource = {"group": labels.BATCH_GROUP, "version": labels.BATCH_VERSION, "resource": "jobs"}
    request = {"uid": "1", "operation": "CREATE", "resource": resource, "object": obj}
    return jsoncodec.dumps({"apiVersion": "admission.k8s.io/v1", "request": request})


def no_queues() -> tuple[QueueView | None, str | None]:
    return None, None


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How often a Job is defaulted (the one function every default goes through) and read into
    the model."""
    counted: Counter[str] = Counter()
    apply_defaults = defaulting._apply_defaults
    model_validate = Job.model_validate

    def defaults(raw: dict[str, Any], scheduler_name: str) -> dict[str, Any]:
        counted["defaulted"] += 1
        return apply_defaults(raw, scheduler_name)

    def validate(*args: Any, **kwargs: Any) -> Job:
        counted["parsed"] += 1
        return model_validate(*args, **kwargs)

    monkeypatch.setattr(defaulting, "_apply_defaults", defaults)
    monkeypatch.setattr(Job, "model_validate", validate)
    review.MEMO.clear()
    yield counted
    review.MEMO.clear()


def answer(kind: Kind, obj: dict[str, Any], calls: Counter[str]) -> Answer:
    calls.clear()
    found = review.answer(kind, body(obj), SETTINGS, no_queues)
    assert calls == {"defaulted": 1, "parsed": 1}
    return found


@pytest.mark.parametrize("kind", [Kind.MUTATE, Kind.VALIDATE])
def test_a_valid_job_is_defaulted_and_read_once(kind: Kind, calls: Counter[str]) -> None:
    for _ in range(2):  # worked out, then with the memo's patch and spec problems
        response = answer(kind, job(TEMPLATE, 2), calls).body["response"]
        assert response["allowed"] is True
    if kind is Kind.MUTATE:
        patch = json.loads(base64.b64decode(response["patch"]))
        assert {"op": "add", "path": "/spec/queue", "value": "default"} in patch


@pytest.mark.parametrize("kind", [Kind.MUTATE, Kind.VALIDATE])
def test_a_job_the_schema_refuses_is_defaulted_and_read_once(
    kind: Kind, calls: Counter[str]
) -> None:
    for _ in range(2):
        response = answer(kind, job(LOTS, 5), calls).body["response"]
        assert response["allowed"] is False
        assert [c["field"] for c in response["status"]["details"]["causes"]] == [
            "spec.minAvailable",
            "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
        ]
