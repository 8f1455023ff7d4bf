"""`controller.job.decide.timers`: delayed actions kept in memory, re-checked, fired or
cancelled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.job.decide import timers
from controller.job.decide.memory import TimerRecord
from controller.job.decide.policies import JobEvent
from shared.models import PolicyAction, PolicyEvent

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def record(**fields: Any) -> TimerRecord:
    base: dict[str, Any] = {
        "event": "PodFailed",
        "action": "RestartJob",
        "fireAt": "2026-01-01T12:05:00Z",
        "task": "worker",
        "pod": "j-worker-0",
        "podUid": "u0",
        "detail": "pod j-worker-0 failed",
    }
    base.update(fields)
    return base  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        (record(), True),
        (record(event="NoSuchEvent"), False),
        (record(action="NoSuchAction"), False),
        (record(fireAt="yesterday"), False),
        (record(fireAt=""), False),
    ],
)
def test_decode_keeps_only_readable_records(raw: TimerRecord, kept: bool) -> None:
    assert ("k" in timers.decode({"k": raw})) is kept


def test_decode_then_encode_gives_the_record_back() -> None:
    decoded = timers.decode({"k": record()})
    assert decoded["k"] == timers.Timer(
        PolicyEvent.POD_FAILED,
        PolicyAction.RESTART_JOB,
        NOW + timedelta(minutes=5),
        "worker",
        "j-worker-0",
        "u0",
        "pod j-worker-0 failed",
    )
    assert timers.encode(decoded) == {"k": record()}


def test_a_new_timer_has_the_api_second_precision() -> None:
    ev = JobEvent(PolicyEvent.POD_PENDING, "pod p is pending", "worker", "p", "u")
    timer = timers.new_timer(ev, PolicyAction.ABORT_JOB, NOW + timedelta(seconds=1.7))
    assert timer.fire_at == NOW + timedelta(seconds=1)
    assert (timer.event, timer.action, timer.pod, timer.pod_uid) == (
        PolicyEvent.POD_PENDING,
        PolicyAction.ABORT_JOB,
        "p",
        "u",
    )


def failed_pod(name: str, phase: str = "Failed", uid: str = "u0") -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": uid}, "status": {"phase": phase}}


def facts(pods: list[dict[str, Any]] | None = None, **kw: Any) -> timers.Facts:
    return timers.Facts(
        pods_by_name={p["metadata"]["name"]: p for p in pods or []},
        pod_group_phase=kw.get("pod_group_phase", "Running"),
        completed_tasks=frozenset(kw.get("completed", ())),
        failed_tasks=frozenset(kw.get("failed", ())),
    )


def timer(event: PolicyEvent, fire_in: timedelta, **kw: Any) -> timers.Timer:
    return timers.Timer(
        event,
        PolicyAction.RESTART_JOB,
        NOW + fire_in,
        task=kw.get("task"),
        pod=kw.get("pod"),
        pod_uid=kw.get("pod_uid"),
    )


LATER, DUE = timedelta(minutes=1), timedelta(0)


@pytest.mark.parametrize(
    ("t", "seen", "outcome"),
    [
        # PodFailed: holds while the pod is still Failed
        (timer(PolicyEvent.POD_FAILED, LATER, pod="p"), facts([failed_pod("p")]), "kept"),
        (timer(PolicyEvent.POD_FAILED, DUE, pod="p"), facts([failed_pod("p")]), "fired"),
        (
            timer(PolicyEvent.POD_FAILED, DUE, pod="p"),
            facts([failed_pod("p", "Running")]),
            "cancelled",
        ),
        (timer(PolicyEvent.POD_FAILED, DUE, pod="p"), facts([]), "cancelled"),
        # PodPending: the same pod (uid) still Pending
        (
            timer(PolicyEvent.POD_PENDING, DUE, pod="p", pod_uid="u0"),
            facts([failed_pod("p", "Pending")]),
            "fired",
        ),
        (
            timer(PolicyEvent.POD_PENDING, DUE, pod="p", pod_uid="old"),
            facts([failed_pod("p", "Pending")]),
            "cancelled",
        ),
        # PodEvicted: holds until the pod runs again
        (timer(PolicyEvent.POD_EVICTED, DUE, pod="p"), facts([]), "fired"),
        (
            timer(PolicyEvent.POD_EVICTED, DUE, pod="p"),
            facts([failed_pod("p", "Running")]),
            "cancelled",
        ),
        # task and job causes
        (timer(PolicyEvent.TASK_COMPLETED, DUE, task="w"), facts(completed=["w"]), "fired"),
        (timer(PolicyEvent.TASK_COMPLETED, DUE, task="w"), facts(), "cancelled"),
        (timer(PolicyEvent.TASK_FAILED, LATER, task="w"), facts(failed=["w"]), "kept"),
        (timer(PolicyEvent.UNKNOWN, DUE), facts(pod_group_phase="Unknown"), "fired"),
        (timer(PolicyEvent.UNKNOWN, DUE), facts(pod_group_phase="Running"), "cancelled"),
        (timer(PolicyEvent.JOB_UPDATED, DUE), facts(), "fired"),
    ],
)
def test_step_keeps_fires_or_cancels(t: timers.Timer, seen: timers.Facts, outcome: str) -> None:
    step = timers.step({"k": t}, seen, NOW)
    got = "kept" if "k" in step.timers else "fired" if step.fired else "cancelled"
    assert got == outcome
    assert step.next_fire == (t.fire_at if outcome == "kept" else None)
    if outcome == "fired":
        assert step.fired[0][1].action == PolicyAction.RESTART_JOB
        assert step.fired[0][1].cause.endswith("(delayed action due)")


@pytest.mark.parametrize(
    ("tasks", "pods", "left"),
    [
        ((), (), {"a", "b", "c"}),
        (("w",), (), {"b", "c"}),
        ((), ("p",), {"a", "c"}),
        (("w",), ("p",), {"c"}),
    ],
)
def test_forget_drops_the_timers_of_restarted_tasks_and_pods(
    tasks: tuple[str, ...], pods: tuple[str, ...], left: set[str]
) -> None:
    kept = {
        "a": timer(PolicyEvent.TASK_FAILED, LATER, task="w"),
        "b": timer(PolicyEvent.POD_FAILED, LATER, pod="p", task="other"),
        "c": timer(PolicyEvent.UNKNOWN, LATER),
    }
    assert set(timers.forget(kept, tasks, pods)) == left


def test_next_fire_is_the_earliest() -> None:
    kept = {
        "a": timer(PolicyEvent.UNKNOWN, timedelta(minutes=3)),
        "b": timer(PolicyEvent.JOB_UPDATED, timedelta(minutes=2)),
    }
    assert timers.next_fire(kept) == NOW + timedelta(minutes=2)
    assert timers.next_fire({}) is None
