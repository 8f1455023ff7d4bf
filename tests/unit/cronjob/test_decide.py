"""The schedule decision of one CronJob sync, as a table: (spec, status, children, now) in,
writes out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.cronjob.decide import Child, Decision, decide, due_slot, job_name
from shared.cronschedule import parse_schedule
from shared.models.cronjob import SCHEDULED_TIMESTAMP_ANNOTATION, CronJob

CREATED = "2026-01-10T09:00:00Z"


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def cron(
    schedule: str = "* * * * *",
    *,
    last: str | None = None,
    active: tuple[str, ...] = (),
    created: str = CREATED,
    **spec: Any,
) -> CronJob:
    status: dict[str, Any] = {}
    if last:
        status["lastScheduleTime"] = last
    if active:
        status["active"] = [{"name": n, "uid": f"uid-{n}", "kind": "Job"} for n in active]
    return CronJob.from_wire(
        {
            "metadata": {
                "name": "nightly",
                "namespace": "ml",
                "uid": "cron-uid",
                "creationTimestamp": created,
            },
            "spec": {
                "schedule": schedule,
                "jobTemplate": {
                    "metadata": {"labels": {"team": "a"}},
                    "spec": {"tasks": [{"name": "t", "replicas": 1, "template": {}}]},
                },
                **spec,
            },
            "status": status,
        }
    )


def child(
    name: str, phase: str = "Running", created: str = CREATED, done: str | None = None
) -> Child:
    return Child(name, f"uid-{name}", phase, _t(created), _t(done) if done else None)


@dataclass
class Case:
    cron: CronJob
    now: str
    children: list[Child] = field(default_factory=list)
    creates: str | None = None  # the scheduled slot, UTC
    deletes: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    active: tuple[str, ...] = ()
    requeue: float | None = None


CASES: dict[str, Case] = {
    "nothing due yet: requeue just after the next slot": Case(
        cron("0 10 * * *", created="2026-01-10T09:00:00Z"),
        now="2026-01-10T09:30:00Z",
        requeue=30 * 60 + 0.1,
    ),
    "the first slot creates a Job": Case(
        cron("*/5 * * * *"), now="2026-01-10T09:05:10Z", creates="2026-01-10T09:05:00Z"
    ),
    "missed runs: only the most recent slot gets a Job": Case(
        cron("* * * * *", last="2026-01-10T09:00:00Z"),
        now="2026-01-10T09:07:30Z",
        creates="2026-01-10T09:07:00Z",
        requeue=30.1,
    ),
    "more than 100 missed: one event, still one Job": Case(
        cron("* * * * *", last="2026-01-10T09:00:00Z"),
        now="2026-01-10T12:00:30Z",
        creates="2026-01-10T12:00:00Z",
        reasons=("TooManyMissedTimes",),
    ),
    "a long outage on a weekday schedule still finds the last weekday slot": Case(
        cron("0 9 * * 1-5", last="2026-01-02T09:00:00Z"),
        now="2026-03-08T12:00:00Z",  # a Sunday
        creates="2026-03-06T09:00:00Z",
    ),
    "deadline passed: the late slot is skipped": Case(
        cron("* * * * *", last="2026-01-10T09:00:00Z", startingDeadlineSeconds=10),
        now="2026-01-10T09:05:30Z",
    ),
    "inside the deadline: the slot runs": Case(
        cron("* * * * *", last="2026-01-10T09:00:00Z", startingDeadlineSeconds=60),
        now="2026-01-10T09:05:30Z",
        creates="2026-01-10T09:05:00Z",
    ),
    "the slot already ran": Case(
        cron("* * * * *", last="2026-01-10T09:05:00Z"), now="2026-01-10T09:05:40Z", requeue=20.1
    ),
    "Allow with a running Job: another one": Case(
        cron("* * * * *", last="2026-01-10T09:04:00Z", active=("nightly-a",)),
        children=[child("nightly-a")],
        now="2026-01-10T09:05:01Z",
        creates="2026-01-10T09:05:00Z",
        active=("nightly-a",),
    ),
    "Forbid with a running Job: none": Case(
        cron(
            "* * * * *",
            last="2026-01-10T09:04:00Z",
            active=("nightly-a",),
            concurrencyPolicy="Forbid",
        ),
        children=[child("nightly-a")],
        now="2026-01-10T09:05:01Z",
        reasons=("ForbidConcurrent",),
        active=("nightly-a",),
    ),
    "Forbid with a suspended (Aborted) Job: still none": Case(
        cron("* * * * *", last="2026-01-10T09:04:00Z", active=("a",), concurrencyPolicy="Forbid"),
        children=[child("a", "Aborted")],
        now="2026-01-10T09:05:01Z",
        reasons=("ForbidConcurrent",),
        active=("a",),
    ),
    "Forbid once the Job finished: the slot runs": Case(
        cron("* * * * *", last="2026-01-10T09:04:00Z", active=("a",), concurrencyPolicy="Forbid"),
        children=[child("a", "Completed", done="2026-01-10T09:05:20Z")],
        now="2026-01-10T09:05:30Z",
        creates="2026-01-10T09:05:00Z",
        reasons=("SawCompletedJob",),
    ),
    "Replace: the running Job is deleted, a new one created": Case(
        cron("* * * * *", last="2026-01-10T09:04:00Z", active=("a",), concurrencyPolicy="Replace"),
        children=[child("a")],
        now="2026-01-10T09:05:01Z",
        creates="2026-01-10T09:05:00Z",
        deletes=("a",),
        reasons=("ReplaceConcurrent",),
    ),
    "Replace with nothing active just creates": Case(
        cron("* * * * *", last="2026-01-10T09:04:00Z", concurrencyPolicy="Replace"),
        now="2026-01-10T09:05:01Z",
        creates="2026-01-10T09:05:00Z",
    ),
    "suspend: nothing scheduled and no requeue": Case(
        cron("* * * * *", last="2026-01-10T09:00:00Z", suspend=True),
        now="2026-01-10T09:05:30Z",
    ),
    "suspend still cleans up history": Case(
        cron("* * * * *", suspend=True, failedJobsHistoryLimit=0),
        children=[child("f", "Failed", done="2026-01-10T09:01:10Z")],
        now="2026-01-10T09:05:30Z",
        deletes=("f",),
    ),
    "history limits: the oldest beyond each limit go": Case(
        cron("0 0 1 1 *", successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1),
        children=[
            child("c1", "Completed", "2026-01-10T09:01:00Z", "2026-01-10T09:02:00Z"),
            child("c2", "Completed", "2026-01-10T09:03:00Z", "2026-01-10T09:04:00Z"),
            child("f1", "Failed", "2026-01-10T09:01:00Z"),
            child("f2", "Failed", "2026-01-10T09:02:00Z"),
            child("t1", "Terminated", "2026-01-10T09:00:00Z"),
        ],
        now="2026-01-10T09:05:00Z",
        deletes=("c1", "f1"),
    ),
    "a vanished active Job is a stale reference": Case(
        cron("0 0 1 1 *", active=("gone",)),
        now="2026-01-10T09:05:00Z",
        reasons=("StaleReference",),
    ),
    "an unfinished child missing from active is taken back, and Forbid sees it": Case(
        cron("* * * * *", last="2026-01-10T09:04:00Z", concurrencyPolicy="Forbid"),
        children=[child("lost")],
        now="2026-01-10T09:05:01Z",
        reasons=("OrphanedJob", "ForbidConcurrent"),
        active=("lost",),
    ),
    "time zone: 9:00 in Berlin is 8:00 UTC in winter": Case(
        cron("0 9 * * *", timeZone="Europe/Berlin"),
        now="2026-01-11T08:00:05Z",
        creates="2026-01-11T08:00:00Z",
    ),
    "time zone: 9:00 in Berlin is 7:00 UTC in summer": Case(
        cron("0 9 * * *", timeZone="Europe/Berlin", created="2026-07-01T00:00:00Z"),
        now="2026-07-01T07:00:05Z",
        creates="2026-07-01T07:00:00Z",
    ),
    "DST spring forward: 2:30 does not exist, it runs once at 3:00": Case(
        cron(
            "30 2 * * *",
            timeZone="America/New_York",
            last="2026-03-07T07:30:00Z",
        ),
        now="2026-03-08T07:00:05Z",
        creates="2026-03-08T07:00:00Z",
    ),
    "DST fall back: 1:30 happens twice, it runs once": Case(
        cron("30 1 * * *", timeZone="America/New_York", last="2026-11-01T05:30:00Z"),
        now="2026-11-01T06:30:05Z",
        requeue=(_t("2026-11-02T06:30:00Z") - _t("2026-11-01T06:30:05Z")).total_seconds() + 0.1,
    ),
    "DST fall back: an hourly schedule runs every real hour": Case(
        cron("@hourly", timeZone="America/New_York", last="2026-11-01T05:00:00Z"),
        now="2026-11-01T06:00:05Z",
        creates="2026-11-01T06:00:00Z",
    ),
    "unknown time zone: an event, nothing else": Case(
        cron("* * * * *", timeZone="Mars/Olympus"),
        now="2026-01-10T09:05:30Z",
        reasons=("InvalidTimeZone",),
    ),
    "unparseable schedule: an event": Case(
        cron("61 * * * *"), now="2026-01-10T09:05:30Z", reasons=("UnParseableCronJobSchedule",)
    ),
    "@every: a constant delay from the last run": Case(
        cron("@every 90s", last="2026-01-10T09:00:00Z"),
        now="2026-01-10T09:01:31Z",
        creates="2026-01-10T09:01:30Z",
    ),
}


def _requeue(decision: Decision) -> float | None:
    return None if decision.requeue_after is None else decision.requeue_after.total_seconds()


@pytest.mark.parametrize("name", list(CASES))
def test_decide(name: str) -> None:
    case = CASES[name]
    decision = decide(case.cron, case.children, _t(case.now), UTC)
    if case.creates is None:
        assert decision.create is None
    else:
        slot = _t(case.creates)
        assert decision.scheduled == slot
        assert decision.last_schedule_time == slot
        assert decision.create is not None
        assert decision.create["metadata"]["name"] == job_name("nightly", slot)
    assert tuple(n for n, _ in decision.delete) == case.deletes
    assert tuple(e.reason for e in decision.events) == case.reasons
    assert tuple(r["name"] for r in decision.active) == case.active
    if case.requeue is not None:
        assert _requeue(decision) == pytest.approx(case.requeue)
    if case.cron.spec.suspend:
        assert decision.requeue_after is None


def test_the_created_job_is_volcanos() -> None:
    decision = decide(cron("0 9 * * *", timeZone="Asia/Tokyo"), [], _t("2026-01-11T00:00:30Z"), UTC)
    job = decision.create
    assert job is not None
    # 2026-01-11T00:00Z is 1,768,089,600 s after the epoch: 29,468,160 minutes.
    assert job["metadata"]["name"] == "nightly-29468160"
    assert job["metadata"]["annotations"] == {
        SCHEDULED_TIMESTAMP_ANNOTATION: "2026-01-11T09:00:00+09:00"
    }
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "CronJob",
            "name": "nightly",
            "uid": "cron-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert job["spec"]["tasks"][0]["name"] == "t"


def test_without_a_time_zone_the_schedule_runs_in_the_local_zone_but_stamps_utc() -> None:
    local = ZoneInfo("Asia/Kolkata")  # +05:30
    decision = decide(cron("0 9 * * *"), [], _t("2026-01-11T03:30:10Z"), local)
    assert decision.scheduled == _t("2026-01-11T03:30:00Z")
    assert decision.create is not None
    stamp = decision.create["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION]
    assert stamp == "2026-01-11T03:30:00+00:00"


def test_completed_child_moves_last_successful_time_forward() -> None:
    children = [
        child("a", "Completed", done="2026-01-10T09:02:00Z"),
        child("b", "Completed", done="2026-01-10T09:04:00Z"),
    ]
    decision = decide(cron("0 0 1 1 *"), children, _t("2026-01-10T09:05:00Z"), UTC)
    assert decision.last_successful_time == _t("2026-01-10T09:04:00Z")


def test_due_slot_walks_few_slots_after_a_year_of_minutes() -> None:
    schedule = parse_schedule("* * * * *")
    slots = due_slot(schedule, UTC, _t("2025-01-01T00:00:00Z"), _t("2026-01-01T00:00:30Z"))
    assert slots.due == _t("2026-01-01T00:00:00Z")
    assert slots.following == _t("2026-01-01T00:01:00Z")
    # Slots are strictly after `earliest`: 00:01 of the first day up to midnight a year on.
    assert slots.missed == 365 * 24 * 60
    assert timedelta(0) < slots.following - _t("2026-01-01T00:00:30Z")
