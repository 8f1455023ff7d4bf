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
    partitions,
    podview,
    restarts,
    retrybudget,
    state,
    steps,
    suspension,
    unrecoverable,
)
from controller.job.decide import status as status_mod
from controller.job.decide import timers as timers_mod
from controller.job.decide.policies import Decision
from controller.job.decide.state import Kill, Transition
from controller.job.decide.steps import Draft, JobRound
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
    return max(decisions, key=lambda due: (state.ACTION_RANK[due.action], due.command))


def targets(
    pods: Iterable[WireObject], decision: Decision, decisions: Iterable[Decision] = ()
) -> Target:
    """The tasks and pods the targeted restarts among `decision` and `decisions` name."""
    members = list(pods)
    tasks: set[str] = set()
    names: set[str] = set()
    for named in [decision, *decisions]:
        if named.action not in TARGETED:
            continue
        if named.action == PolicyAction.RESTART_TASK and named.task:
            tasks.add(named.task)
        elif named.action == PolicyAction.RESTART_POD and named.pod:
            names.add(named.pod)
        elif named.action == PolicyAction.RESTART_POD and named.task:
            tasks.add(named.task)
        elif named.action == PolicyAction.RESTART_PARTITION:
            names |= partitions.partition_pods(members, named.task, named.pod)
    return Target(frozenset(tasks), frozenset(names))


def execute(seen: JobRound, draft: Draft, decision: Decision, decisions: list[Decision]) -> None:
    s = draft.status
    action = decision.action
    # Targeted restarts due together become one restart (one retry consumed).
    target = targets(seen.pod_objects, decision, decisions if action in TARGETED else ())
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
        steps.add(
            draft,
            steps.event(
                "Normal",
                "ActionIgnored",
                f"{action.value} does nothing in phase {s.phase.value} ({decision.cause})",
            ),
        )
        return
    steps.add(
        draft, steps.event("Normal", "ExecuteAction", f"Start to execute action {action.value}")
    )
    retry_before = s.retry_count
    cause = retrybudget.classify(decision, steps.pod_of(seen, decision.pod))
    charge = retrybudget.charge(cause, seen.retry_policy)
    # The kills only shape the status written with the decision (counters, succeeded
    # indexes); the plan drops them and the next reconciles carry them out.
    kill_for(seen, draft, transition, target, retry_before, charged=charge.max_retry)
    if transition.counts_retry and charge.max_retry:
        s.retry_count += 1
    if transition.bump_version:
        s.version += 1
    draft.timers = (
        timers_mod.forget(draft.timers, target.tasks, target.pods)
        if transition.kill == Kill.TARGET
        else {}
    )
    if transition.to == JobPhase.RESTARTING:
        count_restart(draft, cause)
        backoff = 0.0
        if transition.counts_retry and charge.counted:
            counted = s.restart_counts.get("application", 0) + s.restart_counts.get(
                "infrastructure", 0
            )
            backoff = retrybudget.backoff_seconds(seen.retry_policy, counted, seen.job.uid)
        when = status_mod.rfc3339(seen.now)
        s.attempts = attempts.end(
            s.attempts,
            when,
            cause=cause.value,
            reason=f"{action.value} because {decision.cause}",
            failed=attempts.failed_pods(seen.pod_objects),
            backoff_seconds=backoff,
        )
        not_before = status_mod.rfc3339(seen.now + timedelta(seconds=backoff)) if backoff else None
        s.restart = restarts.RestartRecord(
            action, target.tasks, target.pods, cause.value, not_before
        )
        s.controlled[restarts.RECORD_KEY] = restarts.encode(s.restart)
    else:
        steps.end_restart(draft)
    message = f"{action.value} because {decision.cause}"
    draft.decided = steps.set_phase(seen, draft, transition.to, source, message)


def count_restart(draft: Draft, cause: retrybudget.Cause) -> None:
    key = cause.value.lower()
    draft.status.restart_counts[key] = draft.status.restart_counts.get(key, 0) + 1


def kill_for(
    seen: JobRound,
    draft: Draft,
    transition: Transition,
    target: Target,
    retry_before: int,
    *,
    charged: bool,
) -> None:
    """The pods a transition kills, and the succeeded slots it forgets."""
    recorded = draft.status.recorded_succeeded
    if transition.kill == Kill.ALL:
        keep_finished = (
            transition.counts_retry
            and charged
            and state.is_last_retry(retry_before, seen.max_retry)
        )
        steps.kill(seen, draft, (p for p in seen.pods if not (keep_finished and p.finished)))
        draft.status.recorded_succeeded = {}
    elif transition.kill == Kill.TARGET:
        chosen = [p for p in seen.pods if p.task in target.tasks or p.name in target.pods]
        steps.kill(seen, draft, chosen)
        for pod in chosen:
            if pod.task is not None and pod.index is not None:
                recorded.get(pod.task, set()).discard(pod.index)
        for task in target.tasks:
            recorded.pop(task, None)
    elif transition.kill == Kill.UNFINISHED:
        steps.kill_unfinished(seen, draft)
    elif transition.kill == Kill.NOT_SUCCEEDED:
        steps.kill(seen, draft, (p for p in seen.pods if p.phase != podview.SUCCEEDED))


def deadline_passed(seen: JobRound, draft: Draft) -> bool:
    """`spec.activeDeadlineSeconds` passed while the job ran: it fails (its unfinished pods
    are deleted by the reconciles after this decision)."""
    limit = seen.job.spec.active_deadline_seconds
    phase = draft.status.phase
    if limit is None or phase not in DEADLINE_PHASES:
        return False  # finishing (Completing, Terminating) or finished: too late to fail
    suspended = suspension.clock_paused(seen.job, phase)
    due = deadline.check(limit, draft.status.clock, suspended=suspended, now=seen.now)
    if due.remaining is not None:
        draft.requeue.append(due.remaining)
    if not due.exceeded:
        return False
    steps.kill_unfinished(seen, draft)
    draft.decided = steps.set_phase(
        seen,
        draft,
        JobPhase.FAILED,
        "DeadlineExceeded",
        f"the job ran longer than its activeDeadlineSeconds of {limit}s",
    )
    if draft.decided:
        steps.end_restart(draft)
        steps.add(
            draft,
            steps.event(
                "Warning",
                "DeadlineExceeded",
                f"the job was active for {limit}s, its activeDeadlineSeconds; its pods are deleted",
            ),
        )
    return True


def unrecoverable_failure(seen: JobRound, draft: Draft) -> bool:
    """A Pending job that can never run (a name longer than DNS allows, a plugin that cannot
    be configured) fails now with the reason instead of waiting forever."""
    if draft.status.phase != JobPhase.PENDING:
        return False
    problem = unrecoverable.find(seen.job)
    if problem is None:
        return False
    steps.kill_unfinished(seen, draft)
    draft.decided = steps.set_phase(seen, draft, JobPhase.FAILED, problem.reason, problem.message)
    if draft.decided:
        steps.add(draft, steps.event("Warning", problem.reason, problem.message))
    return True
