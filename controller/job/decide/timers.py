"""Delayed actions (a policy with a `timeout`): started, re-checked, fired or cancelled.

A timer is a frozen `Timer` with its `datetime`s; the planner's memory keeps it as a
`TimerRecord` (`decode`/`encode`). Each reconcile re-checks every timer's cause against what is
observed now (`step`): a timer whose cause went away is cancelled, a due one fires. Delays count
from what the API records (`timer_start`), so a restarted controller keeps the deadlines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from controller.job.decide import podview
from controller.job.decide.memory import TimerRecord
from controller.job.decide.policies import Decision, JobEvent
from controller.job.decide.status import parse_time, rfc3339
from shared.models import PolicyAction, PolicyEvent
from shared.wire import container_statuses, init_container_statuses, terminated_state


@dataclass(frozen=True)
class Timer:
    """One delayed action; `fire_at` has the API's second precision (metav1.Time)."""

    event: PolicyEvent
    action: PolicyAction
    fire_at: datetime
    task: str | None = None
    pod: str | None = None
    pod_uid: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class Facts:
    """What event causes are re-checked against."""

    pods_by_name: Mapping[str, Mapping[str, Any]]
    pod_group_phase: str
    completed_tasks: frozenset[str]
    failed_tasks: frozenset[str]


def new_timer(ev: JobEvent, action: PolicyAction, fire_at: datetime) -> Timer:
    return Timer(
        event=ev.event,
        action=action,
        fire_at=fire_at.replace(microsecond=0),
        task=ev.task,
        pod=ev.pod,
        pod_uid=ev.pod_uid,
        detail=ev.detail,
    )


def decode(records: Mapping[str, TimerRecord] | None) -> dict[str, Timer]:
    """The timers kept in memory; a record that cannot be read is dropped (only its clock is
    lost: the cause starts it again)."""
    out: dict[str, Timer] = {}
    for key, record in (records or {}).items():
        fire_at = parse_time(record.get("fireAt"))
        try:
            event, action = PolicyEvent(record.get("event")), PolicyAction(record.get("action"))
        except ValueError:
            continue
        if fire_at is None:
            continue
        out[key] = Timer(
            event=event,
            action=action,
            fire_at=fire_at,
            task=record.get("task"),
            pod=record.get("pod"),
            pod_uid=record.get("podUid"),
            detail=record.get("detail") or "",
        )
    return out


def encode(timers: Mapping[str, Timer]) -> dict[str, TimerRecord]:
    return {
        key: {
            "event": str(t.event),
            "action": t.action.value,
            "fireAt": rfc3339(t.fire_at),
            "task": t.task,
            "pod": t.pod,
            "podUid": t.pod_uid,
            "detail": t.detail,
        }
        for key, t in timers.items()
    }


def cause_holds(timer: Timer, facts: Facts) -> bool:
    """Whether what started a delayed action is still true (re-checked every reconcile; a
    timer whose cause went away is cancelled, e.g. by the pod running again)."""
    event = timer.event
    pod = facts.pods_by_name.get(str(timer.pod))
    if event == PolicyEvent.POD_PENDING:
        return (
            pod is not None
            and podview.uid_of(pod) == timer.pod_uid
            and podview.phase(pod) == podview.PENDING
            and not podview.is_deleting(pod)
        )
    if event == PolicyEvent.POD_FAILED:
        return (
            pod is not None
            and podview.phase(pod) == podview.FAILED
            and not podview.is_out_of_sync(pod)
            and not podview.is_deleting(pod)
        )
    if event == PolicyEvent.POD_EVICTED:
        return pod is None or podview.phase(pod) not in (podview.RUNNING, podview.SUCCEEDED)
    if event == PolicyEvent.TASK_COMPLETED:
        return timer.task in facts.completed_tasks
    if event == PolicyEvent.TASK_FAILED:
        return timer.task in facts.failed_tasks
    if event == PolicyEvent.UNKNOWN:
        return facts.pod_group_phase == "Unknown"
    return event == PolicyEvent.JOB_UPDATED


@dataclass
class TimerStep:
    timers: dict[str, Timer]
    fired: list[tuple[str, Decision]]
    next_fire: datetime | None


def step(timers: Mapping[str, Timer], facts: Facts, now: datetime) -> TimerStep:
    """Cancel timers whose cause is gone, fire the due ones whose cause still holds."""
    kept: dict[str, Timer] = {}
    fired: list[tuple[str, Decision]] = []
    for key, timer in sorted(timers.items()):
        if not cause_holds(timer, facts):
            continue
        if timer.fire_at <= now:
            fired.append(
                (
                    key,
                    Decision(
                        timer.action,
                        f"{timer.detail or timer.event} (delayed action due)",
                        task=timer.task,
                        pod=timer.pod,
                        event=timer.event,
                    ),
                )
            )
            continue
        kept[key] = timer
    return TimerStep(kept, fired, next_fire(kept))


def next_fire(timers: Mapping[str, Timer]) -> datetime | None:
    return min((t.fire_at for t in timers.values()), default=None)


def forget(
    timers: Mapping[str, Timer], tasks: Iterable[str], pods: Iterable[str]
) -> dict[str, Timer]:
    """The timers left after a targeted restart of `tasks` and `pods`."""
    tasks, pods = frozenset(tasks), frozenset(pods)
    return {k: t for k, t in timers.items() if t.task not in tasks and t.pod not in pods}


def pending_start(pod: Mapping[str, Any] | None, now: datetime) -> datetime:
    """A PodPending delay counts from the pod's creation, so it survives a controller restart."""
    created = parse_time(podview.creation_timestamp(pod))
    return created if created is not None and created <= now else now


def failed_since(pod: Mapping[str, Any] | None, now: datetime) -> datetime:
    """A PodFailed delay counts from when the pod's last container terminated (its
    `finishedAt`), so a controller that restarts keeps the same deadline."""
    finished: list[datetime] = []
    for container in [*init_container_statuses(pod), *container_statuses(pod)]:
        moment = parse_time(terminated_state(container).get("finishedAt"))
        if moment is not None:
            finished.append(moment)
    latest = max(finished, default=None)
    return latest if latest is not None and latest <= now else now


def timer_start(event: JobEvent, pod: Mapping[str, Any] | None, now: datetime) -> datetime:
    """When a delayed action's clock started, read from the API where the API records it."""
    if event.event == PolicyEvent.POD_PENDING:
        return pending_start(pod, now)
    if event.event == PolicyEvent.POD_FAILED:
        return failed_since(pod, now)
    return now
