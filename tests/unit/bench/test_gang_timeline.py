"""bench/gang_timeline.py's pure parts: the steps of each Job and the requests per Job."""

from __future__ import annotations

import json

import pytest

from tests.unit.bench.conftest import load

timeline = load("gang_timeline")


def audit_event(agent: str, verb: str, resource: str, sub: str = "", stage: str = "") -> str:
    ref = {"resource": resource, **({"subresource": sub} if sub else {})}
    return json.dumps(
        {
            "stage": stage or "ResponseComplete",
            "userAgent": f"{agent}/v1.0 (linux/amd64)",
            "verb": verb,
            "objectRef": ref,
            "requestURI": f"/api/v1/{resource}",
        }
    )


def test_requests_per_job_counts_completed_requests_by_client_verb_and_resource() -> None:
    lines = [
        *[audit_event("vcjob-controller", "create", "pods")] * 10,
        *[audit_event("vcjob-controller", "update", "jobs", "status")] * 4,
        audit_event("kube-controller-manager", "get", "jobs"),
        audit_event("vcjob-controller", "create", "pods", stage="ResponseStarted"),
        "",
    ]
    assert timeline.requests_per_job(lines, 2) == [
        ("vcjob-controller create pods", 5.0),
        ("vcjob-controller update jobs/status", 2.0),
        ("kube-controller-manager get jobs", 0.5),
    ]


@pytest.mark.parametrize(
    ("steps", "made", "admitted", "first", "spread"),
    [
        pytest.param({}, [], [], [], [], id="no job"),
        pytest.param(
            {"a": timeline.JobSteps(created=1.0, pod_group=1.5, admitted=2.0, pods=[3.0, 3.5])},
            [0.5],
            [0.5],
            [1.0],
            [0.5],
            id="every step",
        ),
        pytest.param(
            {"a": timeline.JobSteps(created=1.0, pod_group=2.0)},
            [1.0],
            [],
            [],
            [],
            id="not admitted yet",
        ),
    ],
)
def test_step_times(
    steps: dict[str, object],
    made: list[float],
    admitted: list[float],
    first: list[float],
    spread: list[float],
) -> None:
    times = timeline.step_times(steps)
    assert (
        times.created_to_pod_group,
        times.pod_group_to_admitted,
        times.admitted_to_first_pod,
        times.first_to_last_pod,
    ) == (made, admitted, first, spread)
