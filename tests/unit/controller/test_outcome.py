"""`controller.job.decide.outcome`: the status write, the memory and when to look again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from builders import T0, job, observe, pod_of

from controller.job.decide import outcome, steps, timers
from controller.job.decide.model import PlanSettings
from shared.models import JobPhase, PolicyAction, PolicyEvent


def settled() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    j = job().task("w", 1).phase("Running").build()
    return j, [pod_of(j, "w", 0)]


def test_an_unchanged_status_is_not_written_again() -> None:
    j, pods = settled()
    seen, draft = steps.start(observe(j, pods), PlanSettings())
    plan = outcome.finalize(seen, draft)
    assert plan.status is not None  # the first time the counters are written
    j2 = {**j, "status": plan.status}
    seen, draft = steps.start(observe(j2, pods), PlanSettings())
    plan = outcome.finalize(seen, draft)
    assert plan.status is None
    assert plan.requeue_after is None


def test_timers_are_remembered_and_bring_the_next_look_forward() -> None:
    j, pods = settled()
    seen, draft = steps.start(observe(j, pods), PlanSettings())
    timer = timers.Timer(PolicyEvent.UNKNOWN, PolicyAction.RESTART_JOB, T0 + timedelta(seconds=40))
    plan = outcome.finalize(seen, draft._replace(timers={"k": timer}))
    assert plan.memory["timers"]["k"]["fireAt"] == "2026-01-01T12:00:40Z"
    assert plan.requeue_after == timedelta(seconds=40)


def test_a_phase_change_asks_for_no_timed_look() -> None:
    """The written phase brings the next pass at once (`followup.follow_up_needed`); a timed
    look a second later would be a pass that finds nothing to do."""
    j, pods = settled()
    seen, draft = steps.start(observe(j, pods), PlanSettings())
    draft, _ = steps.set_phase(seen, draft, JobPhase.COMPLETING, "R", "m")
    plan = outcome.finalize(seen, draft)
    assert plan.status is not None and plan.status["state"]["phase"] == "Completing"
    assert plan.requeue_after is None
    assert "timers" not in plan.memory


def test_a_job_the_queue_does_not_admit_is_looked_at_again() -> None:
    j = job().task("w", 1).phase("Pending").build()
    seen, draft = steps.start(
        observe(j, [], queue_looked_up=True, queue={"status": {"state": "Closed"}}), PlanSettings()
    )
    found = outcome.blocked_reason(seen, draft)
    assert found is not None and found.reason == "QueueClosed"
    assert outcome.blocked_recheck(seen, found) == outcome.BLOCKED_RECHECK


def test_a_job_the_queue_does_not_admit_waits_for_an_event_when_queues_are_watched() -> None:
    """The Queue's next state change brings the job (`shell.queuewatch`): no timed look."""
    j = job().task("w", 1).phase("Pending").build()
    seen, draft = steps.start(
        observe(j, [], queue_looked_up=True, queue={"status": {"state": "Closed"}}),
        PlanSettings(queue_watched=True),
    )
    found = outcome.blocked_reason(seen, draft)
    assert found is not None and found.reason == "QueueClosed"
    assert outcome.blocked_recheck(seen, found) is None
