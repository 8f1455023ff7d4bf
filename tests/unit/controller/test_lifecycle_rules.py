"""Table tests of the lifecycle rules: the run clock and deadline, suspension, restart causes
and budgets, backoff, attempts, blocking reasons and typed conditions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.job.decide import (
    attempts,
    blocked,
    deadline,
    retrybudget,
    suspension,
    typedconditions,
)
from controller.job.decide.blocked import Blocked, QueueFacts
from controller.job.decide.deadline import RunClock
from controller.job.decide.policies import Decision
from controller.job.decide.retrybudget import Cause
from controller.job.shell.observe import waits_for_admission
from shared.models import Job, JobPhase, PolicyAction, PolicyEvent
from shared.models.job import RetryBackoff, RetryPolicy

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# ---------------------------------------------------------------- run clock and deadline

ADVANCE: list[tuple[str, RunClock, bool, bool, datetime, RunClock]] = [
    ("not started, not running: stays unstarted", RunClock(), False, False, at(5), RunClock()),
    ("first Running starts it", RunClock(), True, False, at(5), RunClock(at(5))),
    ("suspended before it ever ran: not started", RunClock(), False, True, at(5), RunClock()),
    ("a suspension begins", RunClock(T0), False, True, at(10), RunClock(T0, 0, at(10))),
    ("a suspension goes on", RunClock(T0, 0, at(10)), False, True, at(20), RunClock(T0, 0, at(10))),
    (
        "a suspension ends: its length is added",
        RunClock(T0, 3, at(10)),
        True,
        False,
        at(25),
        RunClock(T0, 18, None),
    ),
    ("running on: unchanged", RunClock(T0, 3), True, False, at(99), RunClock(T0, 3)),
]


@pytest.mark.parametrize(
    ("why", "clock", "running", "suspended", "now", "after"), ADVANCE, ids=[x[0] for x in ADVANCE]
)
def test_run_clock_advance(
    why: str, clock: RunClock, running: bool, suspended: bool, now: datetime, after: RunClock
) -> None:
    assert deadline.advance(clock, running=running, suspended=suspended, now=now) == after


CHECK: list[tuple[str, int | None, RunClock, bool, datetime, bool, timedelta | None]] = [
    ("no deadline", None, RunClock(T0), False, at(500), False, None),
    ("never ran", 10, RunClock(), False, at(500), False, None),
    ("time left", 10, RunClock(T0), False, at(4), False, timedelta(seconds=6)),
    ("passed exactly", 10, RunClock(T0), False, at(10), True, None),
    (
        "suspended time does not count",
        10,
        RunClock(T0, 30),
        False,
        at(35),
        False,
        timedelta(seconds=5),
    ),
    ("an ongoing suspension does not count", 10, RunClock(T0, 0, at(5)), True, at(60), False, None),
    (
        "passed before a suspension: nothing due while suspended",
        10,
        RunClock(T0, 0, at(15)),
        True,
        at(60),
        False,
        None,
    ),
    ("passed after a suspension ended", 10, RunClock(T0, 20), False, at(31), True, None),
]


@pytest.mark.parametrize(
    ("why", "limit", "clock", "suspended", "now", "exceeded", "remaining"),
    CHECK,
    ids=[x[0] for x in CHECK],
)
def test_deadline_check(
    why: str,
    limit: int | None,
    clock: RunClock,
    suspended: bool,
    now: datetime,
    exceeded: bool,
    remaining: timedelta | None,
) -> None:
    assert deadline.check(limit, clock, suspended=suspended, now=now) == deadline.DeadlineCheck(
        exceeded, remaining
    )


def test_run_clock_round_trips_through_the_status() -> None:
    clock = RunClock(T0, 7, at(30))
    assert RunClock.from_status(clock.to_status()) == clock
    assert RunClock().to_status() == {
        "startTime": None,
        "suspendedSeconds": None,
        "suspendedSince": None,
    }


@pytest.mark.parametrize(
    ("spec_suspend", "phase", "paused"),
    [
        (None, JobPhase.ABORTING, True),
        (None, JobPhase.ABORTED, True),
        (None, JobPhase.RUNNING, False),
        (None, JobPhase.PENDING, False),
        (None, JobPhase.RESTARTING, False),
        (False, JobPhase.RUNNING, False),
        (True, JobPhase.PENDING, True),  # suspended by spec.suspend (Kueue, vcjob job suspend)
        (True, JobPhase.RUNNING, True),  # the reconcile that deletes its pods
    ],
)
def test_the_run_clock_pauses_while_suspended(
    spec_suspend: bool | None, phase: JobPhase, paused: bool
) -> None:
    job = Job.model_validate({"spec": {"suspend": spec_suspend}})
    assert suspension.clock_paused(job, phase) is paused


# ---------------------------------------------------------------- causes and budgets

EVICTED_POD: dict[str, Any] = {"status": {"phase": "Failed", "reason": "Evicted"}}
DISRUPTED_POD: dict[str, Any] = {
    "status": {"phase": "Failed", "conditions": [{"type": "DisruptionTarget", "status": "True"}]}
}
CRASHED_POD: dict[str, Any] = {"status": {"phase": "Failed"}}
RESTART = PolicyAction.RESTART_JOB

CLASSIFY: list[tuple[str, Decision, dict[str, Any] | None, Cause]] = [
    ("a command", Decision(RESTART, "cmd", command=True), None, Cause.OPERATOR),
    ("a resume", Decision(PolicyAction.RESUME_JOB, "resume", command=True), None, Cause.OPERATOR),
    (
        "a spec edit",
        Decision(RESTART, "scaled", event=PolicyEvent.JOB_UPDATED),
        None,
        Cause.OPERATOR,
    ),
    (
        "a deleted pod",
        Decision(RESTART, "gone", event=PolicyEvent.POD_EVICTED),
        None,
        Cause.INFRASTRUCTURE,
    ),
    (
        "PodGroup Unknown",
        Decision(RESTART, "unknown", event=PolicyEvent.UNKNOWN),
        None,
        Cause.INFRASTRUCTURE,
    ),
    (
        "a failed pod evicted by the kubelet",
        Decision(RESTART, "f", event=PolicyEvent.POD_FAILED),
        EVICTED_POD,
        Cause.INFRASTRUCTURE,
    ),
    (
        "a failed pod with DisruptionTarget",
        Decision(RESTART, "f", event=PolicyEvent.POD_FAILED),
        DISRUPTED_POD,
        Cause.INFRASTRUCTURE,
    ),
    (
        "a crashed container",
        Decision(RESTART, "f", event=PolicyEvent.POD_FAILED),
        CRASHED_POD,
        Cause.APPLICATION,
    ),
    (
        "a failed task",
        Decision(RESTART, "t", event=PolicyEvent.TASK_FAILED),
        None,
        Cause.APPLICATION,
    ),
]


@pytest.mark.parametrize(
    ("why", "decision", "pod", "cause"), CLASSIFY, ids=[x[0] for x in CLASSIFY]
)
def test_classify(why: str, decision: Decision, pod: dict[str, Any] | None, cause: Cause) -> None:
    assert retrybudget.classify(decision, pod) == cause


WITH_INFRA = RetryPolicy(infrastructure_retries=5)
BACKOFF_ONLY = RetryPolicy(backoff=RetryBackoff(base_seconds=1, cap_seconds=8))

CHARGE: list[tuple[str, Cause, RetryPolicy | None, bool, bool]] = [
    ("Volcano: an operator restart counts", Cause.OPERATOR, None, True, False),
    ("Volcano: an infrastructure restart counts", Cause.INFRASTRUCTURE, None, True, False),
    ("Volcano: an application restart counts", Cause.APPLICATION, None, True, False),
    ("retryPolicy: an operator restart never counts", Cause.OPERATOR, WITH_INFRA, False, False),
    (
        "retryPolicy: infrastructure to its own budget",
        Cause.INFRASTRUCTURE,
        WITH_INFRA,
        False,
        True,
    ),
    ("retryPolicy: application to maxRetry", Cause.APPLICATION, WITH_INFRA, True, False),
    (
        "no infrastructureRetries: infrastructure to maxRetry",
        Cause.INFRASTRUCTURE,
        BACKOFF_ONLY,
        True,
        False,
    ),
]


@pytest.mark.parametrize(
    ("why", "cause", "policy", "max_retry", "infra"), CHARGE, ids=[x[0] for x in CHARGE]
)
def test_charge(
    why: str, cause: Cause, policy: RetryPolicy | None, max_retry: bool, infra: bool
) -> None:
    assert retrybudget.charge(cause, policy) == retrybudget.Charge(max_retry, infra)


@pytest.mark.parametrize(
    ("restarts", "policy", "exhausted"),
    [(5, WITH_INFRA, False), (6, WITH_INFRA, True), (99, BACKOFF_ONLY, False), (99, None, False)],
)
def test_infrastructure_exhausted(
    restarts: int, policy: RetryPolicy | None, exhausted: bool
) -> None:
    assert retrybudget.infrastructure_exhausted(restarts, policy) is exhausted


def test_backoff_doubles_up_to_the_cap_less_at_most_a_quarter_of_jitter() -> None:
    policy = RetryPolicy(backoff=RetryBackoff(base_seconds=2, cap_seconds=20))
    delays = [retrybudget.backoff_seconds(policy, n, "uid-1") for n in range(1, 7)]
    for delay, full in zip(delays, [2, 4, 8, 16, 20, 20], strict=True):
        assert full * 0.75 <= delay <= full
    assert delays[:4] == sorted(delays[:4]) and len(set(delays[:4])) == 4  # grows until the cap
    # The jitter depends on the job: jobs restarted together spread out; it is reproducible.
    assert retrybudget.backoff_seconds(policy, 3, "uid-2") != delays[2]
    assert retrybudget.backoff_seconds(policy, 3, "uid-1") == delays[2]


@pytest.mark.parametrize(("policy", "n"), [(None, 3), (WITH_INFRA, 3), (BACKOFF_ONLY, 0)])
def test_no_backoff_without_one_configured(policy: RetryPolicy | None, n: int) -> None:
    assert retrybudget.backoff_seconds(policy, n, "uid") == 0.0


# ---------------------------------------------------------------- attempts


def failed(name: str, code: int | None = None, reason: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Failed"}
    if code is not None:
        status["containerStatuses"] = [{"state": {"terminated": {"exitCode": code}}}]
    if reason:
        status["reason"] = reason
    return {"metadata": {"name": name}, "status": status}


def test_attempts_start_end_and_start_again() -> None:
    history = attempts.start([], "t0")
    assert history == [{"index": 0, "startTime": "t0"}]
    assert attempts.start(history, "t1") == history  # one is open: nothing new
    pods = [failed("j-w-1", 3), {"metadata": {"name": "j-w-0"}, "status": {"phase": "Running"}}]
    ended = attempts.end(
        history,
        "t2",
        cause="Application",
        reason="RestartJob because pod j-w-1 failed",
        failed=attempts.failed_pods(pods),
        backoff_seconds=1.5,
    )
    assert ended == [
        {
            "index": 0,
            "startTime": "t0",
            "endTime": "t2",
            "cause": "Application",
            "reason": "RestartJob because pod j-w-1 failed",
            "failedPods": [{"name": "j-w-1", "exitCode": 3}],
            "backoffSeconds": 1.5,
        }
    ]
    assert attempts.end(ended, "t3", cause=None, reason="x", failed=[]) == ended
    assert attempts.start(ended, "t4")[-1] == {"index": 1, "startTime": "t4"}
    assert attempts.current_index(attempts.start(ended, "t4")) == 1


def test_attempts_are_bounded_and_keep_their_indexes() -> None:
    history: list[dict[str, Any]] = []
    for i in range(attempts.MAX_ATTEMPTS + 5):
        history = attempts.end(
            attempts.start(history, f"s{i}"), f"e{i}", cause="Infrastructure", reason="r", failed=[]
        )
    assert len(history) == attempts.MAX_ATTEMPTS
    assert history[-1]["index"] == attempts.MAX_ATTEMPTS + 4
    assert history[0]["index"] == 5


def test_failed_pods_names_exit_codes_and_reasons() -> None:
    pods = [failed("b", 137, "OOMKilled"), failed("a"), failed("c", reason="Evicted")]
    assert attempts.failed_pods(pods) == [
        {"name": "a"},
        {"name": "b", "exitCode": 137, "reason": "OOMKilled"},
        {"name": "c", "reason": "Evicted"},
    ]


# ---------------------------------------------------------------- blocked


def group(phase: str, message: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if message:
        status["conditions"] = [
            {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": message,
            }
        ]
    return {"status": status}


IMAGE_POD = {
    "metadata": {"name": "j-w-0"},
    "status": {
        "phase": "Pending",
        "containerStatuses": [
            {
                "image": "nope",
                "state": {
                    "waiting": {"reason": "ImagePullBackOff", "message": "back-off pulling nope"}
                },
            }
        ],
    },
}
UNSCHEDULED_POD = {
    "metadata": {"name": "j-w-0"},
    "status": {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/2 nodes are available",
            }
        ],
    },
}
OPEN = QueueFacts("q", True, "Open")

BLOCKED: list[
    tuple[str, list[str], QueueFacts, dict[str, Any] | None, list[dict[str, Any]], Blocked | None]
] = [
    ("nothing blocks", [], OPEN, group("Pending"), [], None),
    (
        "a missing PVC comes first",
        ["data"],
        QueueFacts("q", False),
        None,
        [],
        Blocked("MissingPVC", "PersistentVolumeClaim data not found"),
    ),
    (
        "a missing queue",
        [],
        QueueFacts("q", False),
        group("Pending", "queue q does not exist"),
        [],
        Blocked("QueueMissing", "queue q does not exist"),
    ),
    (
        "a closed queue",
        [],
        QueueFacts("q", True, "Closed"),
        group("Pending", "x"),
        [],
        Blocked("QueueClosed", "queue q is Closed: it admits no new PodGroups"),
    ),
    (
        "a closing queue",
        [],
        QueueFacts("q", True, "Closing"),
        None,
        [],
        Blocked("QueueClosed", "queue q is Closing: it admits no new PodGroups"),
    ),
    (
        "queue not looked up: the scheduler's word",
        [],
        QueueFacts("q"),
        group("Pending", "cpu 8 > 4 in the cluster"),
        [],
        Blocked("Unschedulable", "cpu 8 > 4 in the cluster"),
    ),
    (
        "an admitted group is not blocked by its old condition",
        [],
        OPEN,
        group("Inqueue", "old"),
        [],
        None,
    ),
    (
        "an image that cannot be pulled",
        [],
        OPEN,
        group("Inqueue"),
        [IMAGE_POD],
        Blocked("ImagePullBackOff", "pod j-w-0: back-off pulling nope"),
    ),
    (
        "a pod no node fits",
        [],
        OPEN,
        group("Inqueue"),
        [UNSCHEDULED_POD],
        Blocked("Unschedulable", "pod j-w-0: 0/2 nodes are available"),
    ),
]


@pytest.mark.parametrize(
    ("why", "pvcs", "queue", "pod_group", "pods", "expected"), BLOCKED, ids=[x[0] for x in BLOCKED]
)
def test_blocked_reason(
    why: str,
    pvcs: list[str],
    queue: QueueFacts,
    pod_group: dict[str, Any] | None,
    pods: list[dict[str, Any]],
    expected: Blocked | None,
) -> None:
    found = blocked.blocked_reason(missing_pvcs=pvcs, queue=queue, pod_group=pod_group, pods=pods)
    assert found == expected


# ---------------------------------------------------------------- typed conditions


def facts(
    phase: JobPhase,
    reason: str | None = None,
    group_phase: str | None = None,
    why: Blocked | None = None,
) -> typedconditions.JobFacts:
    return typedconditions.JobFacts(phase, reason, "msg", group_phase, why, 3)


CLOSED = Blocked("QueueClosed", "queue q is Closed")
TYPED: list[tuple[str, typedconditions.JobFacts, dict[str, tuple[str, str]], str | None]] = [
    (
        "waiting",
        facts(JobPhase.PENDING),
        {
            "Admitted": ("False", "Waiting"),
            "Running": ("False", "Pending"),
            "Blocked": ("False", "NotBlocked"),
        },
        None,
    ),
    (
        "in a closed queue",
        facts(JobPhase.PENDING, why=CLOSED),
        {
            "Admitted": ("False", "QueueClosed"),
            "Running": ("False", "Pending"),
            "Blocked": ("True", "QueueClosed"),
        },
        "QueueClosed",
    ),
    (
        "admitted, its pods not pulled",
        facts(JobPhase.PENDING, group_phase="Inqueue", why=Blocked("ImagePullBackOff", "x")),
        {
            "Admitted": ("True", "Admitted"),
            "Running": ("False", "Pending"),
            "Blocked": ("True", "ImagePullBackOff"),
        },
        "ImagePullBackOff",
    ),
    (
        "running",
        facts(JobPhase.RUNNING, "MinAvailableRunning", "Running"),
        {
            "Admitted": ("True", "Admitted"),
            "Running": ("True", "Running"),
            "Blocked": ("False", "NotBlocked"),
        },
        None,
    ),
    (
        "completed",
        facts(JobPhase.COMPLETED, "CompletionsReached"),
        {
            "Admitted": ("True", "Admitted"),
            "Running": ("False", "Completed"),
            "Blocked": ("False", "NotBlocked"),
            "Complete": ("True", "CompletionsReached"),
        },
        None,
    ),
    (
        "completed by its success policy",
        facts(JobPhase.COMPLETED, "SuccessPolicy"),
        {
            "Admitted": ("True", "Admitted"),
            "Running": ("False", "Completed"),
            "Blocked": ("False", "NotBlocked"),
            "Complete": ("True", "SuccessPolicy"),
        },
        "SuccessPolicy",
    ),
    (
        "completed at minSuccess",
        facts(JobPhase.COMPLETED, "MinSuccess"),
        {
            "Admitted": ("True", "Admitted"),
            "Running": ("False", "Completed"),
            "Blocked": ("False", "NotBlocked"),
            "Complete": ("True", "MinSuccess"),
        },
        "MinSuccess",
    ),
    (
        "completed by a CompleteJob command",
        facts(JobPhase.COMPLETED, "CommandIssued"),
        {
            "Admitted": ("True", "Admitted"),
            "Running": ("False", "Completed"),
            "Blocked": ("False", "NotBlocked"),
            "Complete": ("True", "CommandIssued"),
        },
        "CommandIssued",
    ),
    (
        "failed past its deadline",
        facts(JobPhase.FAILED, "DeadlineExceeded"),
        {
            "Admitted": ("True", "Admitted"),
            "Running": ("False", "Failed"),
            "Blocked": ("False", "NotBlocked"),
            "Failed": ("True", "DeadlineExceeded"),
        },
        "DeadlineExceeded",
    ),
    (
        "failed out of retries",
        facts(JobPhase.FAILED, "MaxRetryExceeded"),
        {
            "Admitted": ("True", "Admitted"),
            "Running": ("False", "Failed"),
            "Blocked": ("False", "NotBlocked"),
            "Failed": ("True", "BackoffLimitExceeded"),
        },
        "BackoffLimitExceeded",
    ),
]


@pytest.mark.parametrize(
    ("why", "job_facts", "expected", "reason"), TYPED, ids=[x[0] for x in TYPED]
)
def test_typed_conditions_and_reason(
    why: str,
    job_facts: typedconditions.JobFacts,
    expected: dict[str, tuple[str, str]],
    reason: str | None,
) -> None:
    suspended = {"type": "Suspended", "status": "False", "reason": "NotSuspended"}
    merged = typedconditions.merged([suspended], job_facts, "t1")
    assert merged[0] == suspended  # a type this controller does not write is kept
    assert {c["type"]: (c["status"], c["reason"]) for c in merged[1:]} == expected
    assert all(c["observedGeneration"] == 3 for c in merged[1:])
    assert typedconditions.status_reason(merged) == reason


# ---------------------------------------------------------------- when the Queue is read


@pytest.mark.parametrize(
    ("job_phase", "group_phase", "read"),
    [
        ("Pending", None, True),
        ("Pending", "Pending", True),
        ("Pending", "Inqueue", False),
        ("Running", "Running", False),
        ("Aborted", None, False),
    ],
)
def test_the_queue_is_read_while_the_job_waits_for_admission(
    job_phase: str, group_phase: str | None, read: bool
) -> None:
    job = {"status": {"state": {"phase": job_phase}}}
    group = None if group_phase is None else {"status": {"phase": group_phase}}
    assert waits_for_admission(job, group) is read


VERDICT_CHANGES = [
    ("a Queue appears", None, {"status": {"state": "Open"}}, True),
    ("a Queue goes", {"status": {"state": "Open"}}, None, True),
    ("Open to Closed", {"status": {"state": "Open"}}, {"status": {"state": "Closed"}}, True),
    ("a state first written", {"status": {}}, {"status": {"state": "Open"}}, True),
    (
        "only its counts change",
        {"status": {"state": "Open", "running": 1}},
        {"status": {"state": "Open", "running": 2}},
        False,
    ),
    ("nothing either way", None, None, False),
]


@pytest.mark.parametrize(
    ("what", "old", "new", "expected"), VERDICT_CHANGES, ids=[r[0] for r in VERDICT_CHANGES]
)
def test_queue_verdict_changed(
    what: str, old: dict[str, Any] | None, new: dict[str, Any] | None, expected: bool
) -> None:
    assert blocked.queue_verdict_changed(old, new) is expected
