"""vcjob's controller taking over Jobs Volcano's controller ran, from the objects Volcano v1.15.1
wrote (tests/data/volcano_takeover): nothing is created or deleted, the Jobs keep their phase
and Volcano's fields, and vcjob's own times come from the record, not from the takeover."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import with_ssh_key

from controller.job.decide.model import Observed, PlanSettings
from controller.job.decide.plan import reconcile
from shared.rfc3339 import parse_time

RECORDING = (
    Path(__file__).resolve().parents[2] / "data" / "volcano_takeover" / "volcano-v1.15.1.json"
)
ITEMS: list[dict[str, Any]] = json.loads(RECORDING.read_text())["items"]
JOBS = {o["metadata"]["name"]: o for o in ITEMS if o["kind"] == "Job"}
# Volcano's fields: what its controller writes and reads back (JobStatus in its API).
VOLCANO_FIELDS = (
    "state", "minAvailable", "version", "retryCount", "controlledResources", "conditions",
)  # fmt: skip
# Its pod counters; on a finished Job Volcano's follow-up kill zeroes them (a Volcano bug in
# shared/reference), vcjob's count the pods that exist.
COUNTERS = (
    "pending",
    "running",
    "succeeded",
    "failed",
    "terminating",
    "unknown",
    "taskStatusCount",
)


def owned_by(job: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    uid = job["metadata"]["uid"]
    return [
        o
        for o in ITEMS
        if o["kind"] == kind
        and any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])
    ]


def observed(job: dict[str, Any], after: timedelta) -> Observed:
    groups = owned_by(job, "PodGroup")
    children = {
        (o["kind"], o["metadata"]["name"]): o
        for kind in ("Service", "ConfigMap", "Secret", "NetworkPolicy")
        for o in owned_by(job, kind)
    }
    recorded = max(parse_time(c["lastTransitionTime"]) for c in job["status"]["conditions"])
    assert recorded is not None
    return Observed(
        job=job,
        pods=owned_by(job, "Pod"),
        now=recorded + after,
        pod_group=groups[0] if groups else None,
        children=children,
    )


def take_over(name: str, after: timedelta = timedelta(minutes=5)) -> Any:
    settings = PlanSettings()
    return reconcile(with_ssh_key(observed(JOBS[name], after), settings), settings)


@pytest.mark.parametrize("name", sorted(JOBS))
def test_nothing_is_created_or_deleted(name: str) -> None:
    plan = take_over(name)
    assert plan.create == []
    assert plan.delete == []
    assert plan.update == []
    assert plan.delete_job is False


@pytest.mark.parametrize("name", sorted(JOBS))
def test_volcanos_fields_are_kept(name: str) -> None:
    before = JOBS[name]["status"]
    after = take_over(name).status or before
    for key in VOLCANO_FIELDS:
        if key == "state":
            assert after["state"]["phase"] == before["state"]["phase"]
            assert after["state"]["lastTransitionTime"] == before["state"]["lastTransitionTime"]
        else:  # an empty map or a zero is the same as none (Volcano's `omitempty`)
            assert (after.get(key) or None) == (before.get(key) or None), key
    if before["state"]["phase"] in ("Pending", "Running"):
        for key in COUNTERS:
            assert (after.get(key) or None) == (before.get(key) or None), key
        # No runningDuration where Volcano's sync has none: its next sync would rewrite the Job.
        assert "runningDuration" not in after
    else:
        pods = owned_by(JOBS[name], "Pod")
        assert after["succeeded"] == sum(p["status"]["phase"] == "Succeeded" for p in pods)


@pytest.mark.parametrize("name", sorted(JOBS))
def test_times_come_from_the_record_not_the_takeover(name: str) -> None:
    job = JOBS[name]
    status = take_over(name).status
    assert status is not None
    created = job["metadata"]["creationTimestamp"]
    running = next(c for c in job["status"]["conditions"] if c["status"] == "Running")
    started = min(
        [running["lastTransitionTime"]]
        + [p["status"]["startTime"] for p in owned_by(job, "Pod") if "startTime" in p["status"]]
    )
    assert status["startTime"] == started
    (attempt,) = status["attempts"]
    assert attempt["startTime"] == created
    if job["status"]["state"]["phase"] == "Completed":
        assert attempt["endTime"] == job["status"]["state"]["lastTransitionTime"]
        assert attempt["startTime"] <= attempt["endTime"]
