"""The action a reconcile carries out: the most decisive one due, the pods it targets, the
phase it moves to through the phase table (`controller.job.decide.state`), the counters it
bumps and the pods it kills. Also the two rules that fail a job before any action: an
exceeded `activeDeadlineSeconds` and a job that can never run.

A transition with effects is written on its own first (`Draft.decided`): the plan keeps only
the status and its events, and the next reconciles carry out the kills from the written phase.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from controller.job.decide import (
    attempts,
    deadline,
    draft,
    partitions,
    podview,
    restarts,
    retrybudget,
    state,
    suspension,
    unrecoverable,
)
from controller.job.decide import status as status_mod
from controller.job.decide import timers as timers_mod
from controller.job.decide.draft import Draft, JobRound
from controller.job.decide.model import EventRecord
from controller.job.decide.policies import Decision
from controller.job.decide.state import Kill, Transition
from shared.models import JobPhase, PolicyAction
from shared.wire import WireObject

TARGETED = frozenset(
    {PolicyAction.RESTART_TASK, PolicyAction.RESTART_POD, PolicyAction.RESTART_PARTITION}
)
# Phases in which `activeDeadlineSeconds` can fail the job (suspended ones stop its clock).
DEADLINE_PHASES = frozenset(
    {JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING, JobPhase.ABORTING, JobPhase.ABORTED}
)


@dataclass(frozen=True)
class Target:
    tasks: frozenset[str]
    pods: frozenset[str]


def choose(decisions: list[Decision]) -> Decision | None:
    """The most decisive action (commands win ties)."""
    if not decisions:
        return None
    return max(decisions, key=lambda d: (state.ACTION_RANK[d.action], d.command))


def targets(
    pods: Iterable[WireObject], decision: Decision, decisions: Iterable[Decision] = ()
) -> Target:
    """The tasks and pods the targeted restarts among `decision` and `decisions` name."""
    members = list(pods)
    tasks: set[str] = set()
    names: set[str] = set()
    for d in [decision, *decisions]:
        if d.action not in TARGETED:
            continue
        if d.action == PolicyAction.RESTART_TASK and d.task:
            tasks.add(d.task)
        elif d.action == PolicyAction.RESTART_POD and d.pod:
            names.add(d.pod)
        elif d.action == PolicyAction.RESTART_POD and d.task:
            tasks.add(d.task)
        elif d.action == PolicyAction.RESTART_PARTITION:
            names |= partitions.partition_pods(members, d.task, d.pod)
    return Target(frozenset(tasks), frozenset(names))


def execute(r: JobRound, d: Draft, decision: Decision, decisions: list[Decision]) -> None:
    s = d.status
    action = decision.action
    # Targeted restarts due together become one restart (one retry consumed).
    target = targets(r.pod_objects, decision, decisions if action in TARGETED else ())
    if action == PolicyAction.RESTART_PARTITION and not target.pods:
        return  # no partition to restart: Volcano does nothing at all
    if action in (PolicyAction.RESTART_TASK, PolicyAction.RESTART_POD) and not (
        target.tasks or target.pods
    ):
        # A targeted restart caused by a job-wide event restarts the whole job.
        action = PolicyAction.RESTART_JOB
    transition = state.transition_for(s.phase, action)
    source = "CommandIssued" if decision.command else "PolicyAction"
    if transition is None:
        if not decision.command:
            return  # level-triggered causes come back; only commands are reported
        d.plan.events.append(
            EventRecord(
                "Normal",
                "ActionIgnored",
                f"{action.value} does nothing in phase {s.phase.value} ({decision.cause})",
            )
        )
        return
    d.plan.events.append(
        EventRecord("Normal", "ExecuteAction", f"Start to execute action {action.value}")
    )
    retry_before = s.retry_count
    cause = retrybudget.classify(decision, draft.pod_of(r, decision.pod))
    charge = retrybudget.charge(cause, r.retry_policy)
    # The kills only shape the status written with the decision (counters, succeeded
    # indexes); the plan drops them and the next reconciles carry them out.
    kill_for(r, d, transition, target, retry_before, charged=charge.max_retry)
    if transition.counts_retry and charge.max_retry:
        s.retry_count += 1
    if transition.bump_version:
        s.version += 1
    d.timers = (
        timers_mod.forget(d.timers, target.tasks, target.pods)
        if transition.kill == Kill.TARGET
        else {}
    )
    if transition.to == JobPhase.RESTARTING:
        count_restart(d, cause)
        backoff = 0.0
        if transition.counts_retry and charge.counted:
            counted = s.restart_counts.get("application", 0) + s.restart_counts.get(
                "infrastructure", 0
            )
            backoff = retrybudget.backoff_seconds(r.retry_policy, counted, r.job.uid)
        when = status_mod.rfc3339(r.now)
        s.attempts = attempts.end(
            s.attempts,
            when,
            cause=cause.value,
            reason=f"{action.value} because {decision.cause}",
            failed=attempts.failed_pods(r.pod_objects),
            backoff_seconds=backoff,
        )
        not_before = status_mod.rfc3339(r.now + timedelta(seconds=backoff)) if backoff else None
        s.restart = restarts.RestartRecord(
            action, target.tasks, target.pods, cause.value, not_before
        )
        s.controlled[restarts.RECORD_KEY] = restarts.encode(s.restart)
    else:
        draft.end_restart(d)
    message = f"{action.value} because {decision.cause}"
    d.decided = draft.set_phase(r, d, transition.to, source, message)


def count_restart(d: Draft, cause: retrybudget.Cause) -> None:
    key = cause.value.lower()
    d.status.restart_counts[key] = d.status.restart_counts.get(key, 0) + 1


def kill_for(
    r: JobRound,
    d: Draft,
    transition: Transition,
    target: Target,
    retry_before: int,
    *,
    charged: bool,
) -> None:
    """The pods a transition kills, and the succeeded slots it forgets."""
    recorded = d.status.recorded_succeeded
    if transition.kill == Kill.ALL:
        keep_finished = (
            transition.counts_retry and charged and state.is_last_retry(retry_before, r.max_retry)
        )
        draft.kill(r, d, (p for p in r.pods if not (keep_finished and p.finished)))
        d.status.recorded_succeeded = {}
    elif transition.kill == Kill.TARGET:
        chosen = [p for p in r.pods if p.task in target.tasks or p.name in target.pods]
        draft.kill(r, d, chosen)
        for pod in chosen:
            if pod.task is not None and pod.index is not None:
                recorded.get(pod.task, set()).discard(pod.index)
        for task in target.tasks:
            recorded.pop(task, None)
    elif transition.kill == Kill.UNFINISHED:
        draft.kill_unfinished(r, d)
    elif transition.kill == Kill.NOT_SUCCEEDED:
        draft.kill(r, d, (p for p in r.pods if p.phase != podview.SUCCEEDED))


def deadline_passed(r: JobRound, d: Draft) -> bool:
    """`spec.activeDeadlineSeconds` passed while the job ran: it fails (its unfinished pods
    are deleted by the reconciles after this decision)."""
    limit = r.job.spec.active_deadline_seconds
    phase = d.status.phase
    if limit is None or phase not in DEADLINE_PHASES:
        return False  # finishing (Completing, Terminating) or finished: too late to fail
    suspended = suspension.clock_paused(r.job, phase)
    due = deadline.check(limit, d.status.clock, suspended=suspended, now=r.now)
    if due.remaining is not None:
        d.requeue.append(due.remaining)
    if not due.exceeded:
        return False
    draft.kill_unfinished(r, d)
    d.decided = draft.set_phase(
        r,
        d,
        JobPhase.FAILED,
        "DeadlineExceeded",
        f"the job ran longer than its activeDeadlineSeconds of {limit}s",
    )
    if d.decided:
        draft.end_restart(d)
        d.plan.events.append(
            EventRecord(
                "Warning",
                "DeadlineExceeded",
                f"the job was active for {limit}s, its activeDeadlineSeconds; its pods are deleted",
            )
        )
    return True


def unrecoverable_failure(r: JobRound, d: Draft) -> bool:
    """A Pending job that can never run (a name longer than DNS allows, a plugin that cannot
    be configured) fails now with the reason instead of waiting forever."""
    if d.status.phase != JobPhase.PENDING:
        return False
    problem = unrecoverable.find(r.job)
    if problem is None:
        return False
    draft.kill_unfinished(r, d)
    d.decided = draft.set_phase(r, d, JobPhase.FAILED, problem.reason, problem.message)
    if d.decided:
        d.plan.events.append(EventRecord("Warning", problem.reason, problem.message))
    return True


def keep_only_the_decision(d: Draft) -> None:
    """A transition with effects is persisted before any of them: this plan writes the
    status (phase, reason, retryCount, version, the restart record) and its events; the
    kills and deletions are planned again from the written phase by the next reconciles,
    which therefore survive any failed write or a crash in between."""
    d.plan.annotate_out_of_sync = []
    d.plan.delete = []
    d.plan.create = []
    d.plan.update = []
    d.plan.job_spec_patch = None
    d.created = []
