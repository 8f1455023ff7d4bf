"""What one CronJob sync does, decided from (spec, status, children, now) alone.

Kubernetes CronJob semantics as Volcano implements them: only the most recent missed slot gets a
Job; `startingDeadlineSeconds` skips slots older than the deadline; too many missed slots are
reported with one event; `concurrencyPolicy` decides about active Jobs; history limits delete
the oldest finished Jobs. The shell (controller.cronjob.shell) performs the result.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final

from shared import labels, rfc3339
from shared.cronschedule import CronSchedule, ScheduleError, load_zone, parse_schedule
from shared.models.cronjob import (
    CRONJOB_KIND,
    SCHEDULED_TIMESTAMP_ANNOTATION,
    ConcurrencyPolicy,
    CronJob,
)

TOO_MANY_MISSED: Final = 100
# Requeue a little after the slot, so the sync never runs a hair before it.
NEXT_SLOT_SLACK: Final = timedelta(milliseconds=100)
FINISHED: Final = frozenset({"Completed", "Failed", "Terminated"})


@dataclass(frozen=True)
class Child:
    """A Job whose controller reference is this CronJob."""

    name: str
    uid: str
    phase: str
    created: datetime
    transition: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass
class Decision:
    """The writes of one sync: Jobs to delete (with why), at most one Job to create, the new
    status, events, and when to look again (None: only on the next watch event)."""

    delete: list[tuple[str, str]] = field(default_factory=list)
    create: dict[str, Any] | None = None
    scheduled: datetime | None = None
    active: list[dict[str, Any]] = field(default_factory=list)
    last_schedule_time: datetime | None = None
    last_successful_time: datetime | None = None
    events: list[Event] = field(default_factory=list)
    requeue_after: timedelta | None = None

    def warn(self, reason: str, message: str) -> None:
        self.events.append(Event("Warning", reason, message))

    def note(self, reason: str, message: str) -> None:
        self.events.append(Event("Normal", reason, message))


parse_time = rfc3339.parse_time
format_time = rfc3339.format_time


def job_name(cron_name: str, scheduled: datetime) -> str:
    """`<cronjob>-<minutes since the epoch>`: one name per slot, so a retried create is
    idempotent."""
    return f"{cron_name}-{int(scheduled.timestamp()) // 60}"


def zone_of(cron: CronJob, default_zone: tzinfo) -> tzinfo:
    return load_zone(cron.spec.time_zone) if cron.spec.time_zone else default_zone


@dataclass(frozen=True)
class Slots:
    """The most recent slot due in (earliest, now], how many were missed, and the next one."""

    due: datetime | None
    missed: int
    following: datetime


def due_slot(schedule: CronSchedule, zone: tzinfo, earliest: datetime, now: datetime) -> Slots:
    """The slots after `earliest`: only the most recent one at or before `now` counts.

    A long outage would mean walking thousands of slots: the interval between the first two
    estimates how many were missed, and the walk resumes a few intervals before `now`. An
    irregular schedule (weekdays only) can find no slot there; then the walk starts over."""
    first = schedule.next_after(earliest, zone)
    if first > now:
        return Slots(None, 0, first)
    second = schedule.next_after(first, zone)
    if second > now:
        return Slots(first, 1, second)
    interval = (second - first).total_seconds()
    if interval < 1:
        raise ScheduleError("the time between two slots is under a second")
    missed = int((now - first).total_seconds() // interval) + 1
    starts = [first]
    if missed > 3:
        starts.insert(
            0, schedule.next_after(first + timedelta(seconds=(missed - 3) * interval), zone)
        )
    for slot in starts:
        due: datetime | None = None
        while slot <= now:
            due = slot
            slot = schedule.next_after(slot, zone)
        if due is not None:
            return Slots(due, missed, slot)
    return Slots(None, 0, schedule.next_after(now, zone))


def _reference(cron: CronJob, child_name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": labels.BATCH_API_VERSION,
        "kind": labels.JOB_KIND,
        "name": child_name,
        "namespace": cron.namespace,
        "uid": uid,
    }


def build_job(cron: CronJob, scheduled: datetime) -> dict[str, Any]:
    """The Job for one slot: the template's spec, labels and annotations, the scheduled
    timestamp, and a controller reference so deleting the CronJob deletes it."""
    template = cron.spec.job_template
    meta = template.metadata or {}
    annotations = dict(meta.get("annotations") or {})
    stamp_zone: tzinfo = load_zone(cron.spec.time_zone) if cron.spec.time_zone else UTC
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = scheduled.astimezone(stamp_zone).isoformat()
    metadata: dict[str, Any] = {
        "name": job_name(cron.name, scheduled),
        "namespace": cron.namespace,
        "annotations": annotations,
        "ownerReferences": [
            {
                "apiVersion": labels.BATCH_API_VERSION,
                "kind": CRONJOB_KIND,
                "name": cron.name,
                "uid": cron.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if meta.get("labels"):
        metadata["labels"] = dict(meta["labels"])
    return {
        "apiVersion": labels.BATCH_API_VERSION,
        "kind": labels.JOB_KIND,
        "metadata": metadata,
        "spec": copy.deepcopy(template.spec.to_wire()),
    }


def _history(decision: Decision, children: list[Child], phase: str, limit: int) -> None:
    """Delete the oldest finished Jobs of `phase` beyond `limit`."""
    done = sorted((c for c in children if c.phase == phase), key=lambda c: (c.created, c.name))
    for child in done[: max(0, len(done) - limit)]:
        decision.delete.append((child.name, f"history limit: {phase.lower()} Jobs beyond {limit}"))


def decide(cron: CronJob, children: list[Child], now: datetime, default_zone: tzinfo) -> Decision:
    """One sync of `cron` at `now`, given the Jobs it controls. `default_zone` is the zone of a
    CronJob without `timeZone` (the controller's local zone, as in Volcano)."""
    status = cron.status
    decision = Decision(
        last_schedule_time=parse_time(status.last_schedule_time if status else None),
        last_successful_time=parse_time(status.last_successful_time if status else None),
    )
    by_uid = {c.uid: c for c in children}
    listed = [r.to_wire() for r in (status.active or [])] if status else []
    listed_uids = {str(r.get("uid") or "") for r in listed}

    # Finished children leave `active`; a Completed one moves lastSuccessfulTime forward.
    for child in children:
        if not child.finished:
            continue
        if child.uid in listed_uids:
            decision.note(
                "SawCompletedJob", f"Saw completed job: {child.name}, status: {child.phase}"
            )
        if child.phase == "Completed" and child.transition is not None:
            last = decision.last_successful_time
            if last is None or child.transition > last:
                decision.last_successful_time = child.transition

    # `active` keeps the unfinished children it lists; gone or replaced ones are dropped.
    for ref in listed:
        owned = by_uid.get(str(ref.get("uid") or ""))
        if owned is None:
            decision.warn("StaleReference", f"Active job went missing: {ref.get('name')}")
        elif not owned.finished:
            decision.active.append(_reference(cron, owned.name, owned.uid))
    # An unfinished child missing from `active` (its status write was lost) is taken back, so
    # Forbid and Replace still see it.
    for child in sorted(children, key=lambda c: (c.created, c.name)):
        if not child.finished and child.uid not in listed_uids:
            decision.active.append(_reference(cron, child.name, child.uid))
            decision.warn("OrphanedJob", f"Adopted job {child.name}, missing from status.active")

    _history(decision, children, "Completed", cron.spec.successful_jobs_history_limit)
    _history(decision, children, "Failed", cron.spec.failed_jobs_history_limit)

    if cron.spec.suspend:
        return decision
    try:
        zone = zone_of(cron, default_zone)
    except ScheduleError as exc:
        decision.warn("InvalidTimeZone", str(exc))
        return decision
    try:
        schedule = parse_schedule(cron.spec.schedule)
    except ScheduleError as exc:
        decision.warn(
            "UnParseableCronJobSchedule", f"unparseable schedule {cron.spec.schedule!r}: {exc}"
        )
        return decision

    created = parse_time(cron.metadata.get("creationTimestamp")) or now
    earliest = decision.last_schedule_time or created
    deadline = cron.spec.starting_deadline_seconds
    if deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=deadline))
    try:
        slots = due_slot(schedule, zone, earliest, now)
    except ScheduleError as exc:
        decision.warn("InvalidSchedule", f"invalid schedule {cron.spec.schedule!r}: {exc}")
        return decision
    decision.requeue_after = slots.following - now + NEXT_SLOT_SLACK
    scheduled = slots.due
    if scheduled is None:
        return decision
    if slots.missed > TOO_MANY_MISSED:
        decision.warn(
            "TooManyMissedTimes",
            f"too many missed start times ({slots.missed}); only the most recent one, "
            f"{format_time(scheduled)}, starts a Job. Check the clock or set "
            "startingDeadlineSeconds",
        )
    name = job_name(cron.name, scheduled)
    if any(r["name"] == name for r in decision.active) or scheduled == decision.last_schedule_time:
        return decision

    policy = cron.spec.concurrency_policy
    if decision.active and policy is ConcurrencyPolicy.FORBID:
        decision.warn(
            "ForbidConcurrent",
            f"Not starting job for {format_time(scheduled)} because a prior run is still "
            "active and concurrencyPolicy is Forbid",
        )
        return decision
    if decision.active and policy is ConcurrencyPolicy.REPLACE:
        decision.warn(
            "ReplaceConcurrent",
            f"Replacing {len(decision.active)} active job(s) with the run for "
            f"{format_time(scheduled)}",
        )
        for ref in decision.active:
            decision.delete.append((str(ref["name"]), "replaced by a newer run"))
        decision.active = []

    decision.create = build_job(cron, scheduled)
    decision.scheduled = scheduled
    decision.last_schedule_time = scheduled
    return decision
