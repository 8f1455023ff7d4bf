"""One reconcile round in the runner: retries forever, failure reporting, memory, edges."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from controller.job.decide.model import Observed, Plan, PlanSettings
from controller.job.shell.runner import Controller
from controller.settings import Settings
from kubeio.client import COMMANDS, JOBS, PODS, ApiClient
from kubeio.clock import ManualClock
from kubeio.errors import ConflictError, PartialProgressError, PermanentError, TransientError

KEY = "ns/j"


class ScriptedPlanner:
    """Records what it observed; raises the scripted errors first, then returns `plan`."""

    def __init__(self) -> None:
        self.errors: list[Exception] = []
        self.seen: list[Observed] = []
        self.plan = Plan(status={"state": {"phase": "Running"}}, memory={"round": 1})

    def __call__(self, observed: Observed, settings: PlanSettings) -> Plan:
        self.seen.append(observed)
        if self.errors:
            raise self.errors.pop(0)
        return self.plan


@pytest.fixture
def harness(fake_kube: Any) -> Iterator[tuple[Controller, ScriptedPlanner, Any]]:
    planner = ScriptedPlanner()
    settings = Settings(leader_elect=False, health_port=None, metrics_port=None, workers=1)
    ctl = Controller(settings, ApiClient(), reconcile=planner, clock=ManualClock(), kube=fake_kube)
    job = fake_kube.put(
        JOBS,
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u1"},
            "spec": {},
        },
    )
    ctl.cache.upsert("Job", job)
    yield ctl, planner, fake_kube
    ctl.applier.close()
    ctl.recorder.close()


def test_a_successful_round_forgets_failures_and_keeps_the_memory(harness: Any) -> None:
    ctl, planner, kube = harness
    ctl.process(KEY)
    ctl.process(KEY)
    assert planner.seen[0].memory is None
    assert planner.seen[1].memory == {"round": 1}
    assert ctl.queue.num_requeues(KEY) == 0
    assert kube.objects[("jobs", "ns", "j")]["status"]["state"]["phase"] == "Running"


def test_memory_is_not_handed_to_a_new_job_with_the_same_name(harness: Any) -> None:
    ctl, planner, kube = harness
    ctl.process(KEY)
    recreated = dict(kube.objects[("jobs", "ns", "j")])
    recreated["metadata"] = {**recreated["metadata"], "uid": "u2"}
    ctl.cache.upsert("Job", kube.put(JOBS, recreated))
    ctl.process(KEY)
    assert planner.seen[1].memory is None


def test_transient_errors_are_retried_forever_and_never_fail_the_job(harness: Any) -> None:
    ctl, planner, kube = harness
    planner.errors = [TransientError("503 from the server", 503) for _ in range(30)]
    planner.errors += [ConflictError("409", 409) for _ in range(5)]
    for _ in range(35):
        ctl.process(KEY)
    assert ctl.queue.num_requeues(KEY) == 35
    ctl.process(KEY)
    assert ctl.queue.num_requeues(KEY) == 0
    assert kube.objects[("jobs", "ns", "j")]["status"]["state"]["phase"] == "Running"


def test_repeated_failures_raise_a_warning_and_say_so_in_the_state_message(harness: Any) -> None:
    ctl, planner, kube = harness
    planner.errors = [TransientError("POST pods: 500 InternalError", 500) for _ in range(5)]
    for _ in range(4):
        ctl.process(KEY)
    assert ctl.recorder.flush()
    assert not [o for (p, _n, _m), o in kube.objects.items() if p == "events"]
    ctl.process(KEY)
    assert ctl.recorder.flush()
    events = [o for (p, _n, _m), o in kube.objects.items() if p == "events"]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "ReconcileFailing")]
    message = kube.objects[("jobs", "ns", "j")]["status"]["state"]["message"]
    assert "5 times" in message
    assert "POST pods: 500 InternalError" in message


def test_requeue_after_parks_the_key(harness: Any) -> None:
    ctl, planner, _kube = harness
    planner.plan = Plan(requeue_after=timedelta(seconds=30))
    ctl.process(KEY)
    assert ctl.queue.get(timeout=0) is None
    ctl.clock.advance(30)
    assert ctl.queue.get(timeout=0) == KEY


def test_pod_edges_survive_a_failed_round(harness: Any) -> None:
    ctl, planner, _kube = harness
    pod = {
        "kind": "Pod",
        "metadata": {
            "name": "j-w-0",
            "namespace": "ns",
            "uid": "p1",
            "labels": {"volcano.sh/job-name": "j"},
        },
    }
    ctl.cache.upsert("Pod", pod)
    ctl.cache.remove("Pod", pod)
    planner.errors = [TransientError("boom", 500)]
    ctl.process(KEY)
    ctl.process(KEY)
    assert [len(o.pod_edges) for o in planner.seen] == [1, 1]
    ctl.process(KEY)
    assert len(planner.seen[2].pod_edges) == 0


def test_a_deleted_job_is_not_reconciled(harness: Any) -> None:
    ctl, planner, kube = harness
    ctl.cache.remove("Job", kube.objects[("jobs", "ns", "j")])
    ctl.process(KEY)
    assert planner.seen == []


def test_pods_of_the_job_reach_the_planner(harness: Any) -> None:
    ctl, planner, kube = harness
    pod = kube.put(
        PODS,
        {
            "kind": "Pod",
            "metadata": {
                "name": "j-w-0",
                "namespace": "ns",
                "labels": {"volcano.sh/job-name": "j"},
            },
        },
    )
    ctl.cache.upsert("Pod", pod)
    ctl.process(KEY)
    assert [p["metadata"]["name"] for p in planner.seen[0].pods] == ["j-w-0"]


def test_partial_progress_restarts_the_backoff(harness: Any) -> None:
    ctl, planner, _kube = harness
    planner.errors = [TransientError("boom", 500) for _ in range(3)]
    for _ in range(3):
        ctl.process(KEY)
    assert ctl.queue.num_requeues(KEY) == 3
    planner.errors = [PartialProgressError(TransientError("one create failed", 500), progress=4)]
    ctl.process(KEY)
    assert ctl.queue.num_requeues(KEY) == 1


def test_a_permanent_error_warns_once_and_is_not_retried_in_a_loop(harness: Any) -> None:
    ctl, planner, kube = harness
    planner.errors = [PermanentError("POST pods j-w-0: 422 Invalid: spec.containers", 422)]
    ctl.process(KEY)
    assert ctl.queue.num_requeues(KEY) == 0
    assert ctl.queue.get(timeout=0) is None, "no backoff loop for a permanent error"
    assert ctl.recorder.flush()
    events = [o for (p, _n, _m), o in kube.objects.items() if p == "events"]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "ReconcileFailed")]
    message = kube.objects[("jobs", "ns", "j")]["status"]["state"]["message"]
    assert "POST pods j-w-0: 422 Invalid" in message


def test_a_command_for_a_missing_job_is_deleted(harness: Any) -> None:
    ctl, planner, kube = harness
    command = kube.put(
        COMMANDS,
        {
            "kind": "Command",
            "metadata": {"name": "c", "namespace": "ns", "uid": "c1"},
            "action": "AbortJob",
            "target": {"kind": "Job", "name": "gone"},
        },
    )
    ctl.cache.upsert("Command", command)
    ctl.process("ns/gone")
    assert kube.names("commands") == []
    assert planner.seen == []


def test_a_command_is_kept_while_the_cache_has_not_seen_its_new_job(harness: Any) -> None:
    ctl, _planner, kube = harness
    command = kube.put(
        COMMANDS,
        {
            "kind": "Command",
            "metadata": {"name": "c", "namespace": "ns", "uid": "c1"},
            "action": "AbortJob",
            "target": {"kind": "Job", "name": "j"},
        },
    )
    ctl.cache.remove("Job", kube.objects[("jobs", "ns", "j")])
    ctl.cache.upsert("Command", command)
    ctl.process(KEY)
    assert kube.names("commands") == ["c"]


def test_a_written_phase_is_followed_up_at_once(harness: Any) -> None:
    """The effects of a decision come in the next reconcile; our own status write's watch echo
    does not enqueue the job, so the runner does."""
    ctl, _planner, _kube = harness
    ctl.process(KEY)  # writes phase Running on a job without one
    assert ctl.queue.get(timeout=0) == KEY
    ctl.queue.done(KEY)
    ctl.process(KEY)  # the same status again: nothing to follow up
    assert ctl.queue.get(timeout=0) is None


def settle(ctl: Controller, planner: ScriptedPlanner) -> None:
    """Two rounds: the first writes the status, the second finds nothing to do (a fixpoint)."""
    ctl.process(KEY)
    assert ctl.queue.get(timeout=0) == KEY
    ctl.queue.done(KEY)
    planner.plan = Plan(memory={"round": 1})  # the status is as planned: no write
    ctl.process(KEY)


def test_the_resync_skips_a_settled_job_until_its_inputs_change(harness: Any) -> None:
    ctl, planner, kube = harness
    assert ctl.resync_replans(KEY, 30.0)  # never reconciled
    ctl.process(KEY)
    assert ctl.resync_replans(KEY, 30.0)  # that round wrote the status
    ctl.queue.get(timeout=0)
    ctl.queue.done(KEY)
    planner.plan = Plan(memory={"round": 1})
    ctl.process(KEY)
    assert not ctl.resync_replans(KEY, 30.0)
    pod = kube.put(
        PODS,
        {
            "metadata": {
                "name": "j-worker-0",
                "namespace": "ns",
                "uid": "p1",
                "labels": {"volcano.sh/job-name": "j"},
            }
        },
    )
    ctl.cache.upsert("Pod", pod)  # as a watch event whose enqueue went missing
    assert ctl.resync_replans(KEY, 30.0)
    ctl.process(KEY)
    assert not ctl.resync_replans(KEY, 30.0)


def test_a_cluster_wide_change_brings_settled_jobs_back(harness: Any) -> None:
    ctl, planner, _kube = harness
    settle(ctl, planner)
    assert not ctl.resync_replans(KEY, 30.0)
    ctl.cache.upsert(
        "PriorityClass", {"metadata": {"name": "high", "uid": "pc", "resourceVersion": "7"}}
    )
    assert ctl.resync_replans(KEY, 30.0)


def test_a_settled_job_is_replanned_every_ten_periods_all_the_same(harness: Any) -> None:
    ctl, planner, _kube = harness
    settle(ctl, planner)
    ctl.clock.advance(9 * 30.0)  # type: ignore[attr-defined]
    assert not ctl.resync_replans(KEY, 30.0)
    ctl.clock.advance(30.0)  # type: ignore[attr-defined]
    assert ctl.resync_replans(KEY, 30.0)


def test_a_round_that_changed_its_memory_is_not_settled(harness: Any) -> None:
    ctl, planner, _kube = harness
    settle(ctl, planner)
    planner.plan = Plan(memory={"round": 2})
    ctl.process(KEY)
    assert ctl.resync_replans(KEY, 30.0)


def test_a_settled_job_whose_queue_changes_state_is_replanned(harness: Any) -> None:
    ctl, planner, _kube = harness
    queue = {"metadata": {"name": "default", "uid": "q", "resourceVersion": "1"}}
    ctl.cache.upsert("Queue", {**queue, "status": {"state": "Open"}})
    settle(ctl, planner)
    assert not ctl.resync_replans(KEY, 30.0)
    busier = {"metadata": {**queue["metadata"], "resourceVersion": "2"}}
    ctl.cache.upsert("Queue", {**busier, "status": {"state": "Open", "running": 4}})
    assert not ctl.resync_replans(KEY, 30.0)
    closed = {"metadata": {**queue["metadata"], "resourceVersion": "3"}}
    ctl.cache.upsert("Queue", {**closed, "status": {"state": "Closed"}})
    assert ctl.resync_replans(KEY, 30.0)
