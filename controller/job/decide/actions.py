"""The action a reconcile carries out: the most decisive one due, the pods it targets, the
phase it moves to through the phase table (`controller.job.decide.state`), the counters it
bumps and the pods it kills. Also the two rules that fail a job before any action: an
exceeded `activeDeadlineSeconds` and a job that can never run.

A transition with effects is written on its own first (`Draft.decided`): the plan keeps only
the status and its events, and the next reconciles carry out the kills from the written phase.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
from controller.job.decide.statuscodec import StatusDraft
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


def execute(seen: JobRound, draft: Draft, decision: Decision, decisions: list[Decision]) -> Draft:
    s = draft.status
    action = decision.action
    # Targeted restarts due together become one restart (one retry consumed).
    target = targets(seen.pod_objects, decision, decisions if action in TARGETED else ())
    if action == PolicyAction.RESTART_PARTITION and not target.pods:
        return draft  # no partition to restart: Volcano does nothing at all
    if action in (PolicyAction.RESTART_TASK, PolicyAction.RESTART_POD) and not (
        target.tasks or target.pods
    ):
        # A targeted restart caused by a job-wide event restarts the whole job.
        action = PolicyAction.RESTART_JOB
    transition = state.transition_for(s.phase, action)
    source = "CommandIssued" if decision.command else "PolicyAction"
    if transition is None:
        if not decision.command:
            return draft  # level-triggered causes come back; only commands are reported
        said = f"{action.value} does nothing in phase {s.phase.value} ({decision.cause})"
        return steps.add(draft, steps.event("Normal", "ActionIgnored", said))
    draft = steps.add(
        draft, steps.event("Normal", "ExecuteAction", f"Start to execute action {action.value}")
    )
    cause = retrybudget.classify(decision, steps.pod_of(seen, decision.pod))
    charge = retrybudget.charge(cause, seen.retry_policy)
    # The kills only shape the status written with the decision (counters, succeeded
    # indexes); the plan drops them and the next reconciles carry them out.
    draft = kill_for(seen, draft, transition, target, s.retry_count, charged=charge.max_retry)
    s = draft.status._replace(
        retry_count=s.retry_count + (1 if transition.counts_retry and charge.max_retry else 0),
        version=s.version + (1 if transition.bump_version else 0),
    )
    timers = (
        timers_mod.forget(draft.timers, target.tasks, target.pods)
        if transition.kill == Kill.TARGET
        else {}
    )
    draft = draft._replace(status=s, timers=timers)
    if transition.to == JobPhase.RESTARTING:
        counted = transition.counts_retry and charge.counted
        restart = restarting(seen, s, decision, action, target, cause, backoff_counted=counted)
        draft = draft._replace(status=restart)
    else:
        draft = steps.end_restart(draft)
    message = f"{action.value} because {decision.cause}"
    draft, moved = steps.set_phase(seen, draft, transition.to, source, message)
    return draft._replace(decided=moved)


def restarting(
    seen: JobRound,
    s: StatusDraft,
    decision: Decision,
    action: PolicyAction,
    target: Target,
    cause: retrybudget.Cause,
    *,
    backoff_counted: bool,
) -> StatusDraft:
    """The status of a job that starts to restart: the restart counted by cause, the attempt
    ended, the restart record (what it replaces, its backoff) kept for the next rounds."""
    counts = count_restart(s.restart_counts, cause)
    backoff = 0.0
    if backoff_counted:
        counted = counts.get("application", 0) + counts.get("infrastructure", 0)
        backoff = retrybudget.backoff_seconds(seen.retry_policy, counted, seen.job.uid)
    ended = attempts.end(
        s.attempts,
        status_mod.rfc3339(seen.now),
        cause=cause.value,
        reason=f"{action.value} because {decision.cause}",
        failed=attempts.failed_pods(seen.pod_objects),
        backoff_seconds=backoff,
    )
    not_before = status_mod.rfc3339(seen.now + timedelta(seconds=backoff)) if backoff else None
    record = restarts.RestartRecord(action, target.tasks, target.pods, cause.value, not_before)
    return s._replace(
        restart_counts=counts,
        attempts=tuple(ended),
        restart=record,
        controlled={**s.controlled, restarts.RECORD_KEY: restarts.encode(record)},
    )


def count_restart(counts: Mapping[str, int], cause: retrybudget.Cause) -> dict[str, int]:
    key = cause.value.lower()
    return {**counts, key: counts.get(key, 0) + 1}


def kill_for(
    seen: JobRound,
    draft: Draft,
    transition: Transition,
    target: Target,
    retry_before: int,
    *,
    charged: bool,
) -> Draft:
    """The pods a transition kills, and the succeeded slots it forgets."""
    if transition.kill == Kill.ALL:
        keep_finished = (
            transition.counts_retry
            and charged
            and state.is_last_retry(retry_before, seen.max_retry)
        )
        draft = steps.kill(
            seen, draft, (p for p in seen.pods if not (keep_finished and p.finished))
        )
        return draft._replace(status=draft.status._replace(recorded_succeeded={}))
    if transition.kill == Kill.TARGET:
        chosen = [p for p in seen.pods if p.task in target.tasks or p.name in target.pods]
        forgotten: dict[str, set[int]] = {}
        for pod in chosen:
            if pod.task is not None and pod.index is not None:
                forgotten.setdefault(pod.task, set()).add(pod.index)
        recorded = {
            task: done - forgotten.get(task, set())
            for task, done in draft.status.recorded_succeeded.items()
            if task not in target.tasks
        }
        draft = draft._replace(status=draft.status._replace(recorded_succeeded=recorded))
        return steps.kill(seen, draft, chosen)
    if transition.kill == Kill.UNFINISHED:
        return steps.kill_unfinished(seen, draft)
    if transition.kill == Kill.NOT_SUCCEEDED:
        return steps.kill(seen, draft, (p for p in seen.pods if p.phase != podview.SUCCEEDED))
    return draft


def deadline_passed(seen: JobRound, draft: Draft) -> tuple[Draft, bool]:
    """`spec.activeDeadlineSeconds` passed while the job ran: it fails (its unfinished pods
    are deleted by the reconciles after this decision)."""
    limit = seen.job.spec.active_deadline_seconds
    phase = draft.status.phase
    if limit is None or phase not in DEADLINE_PHASES:
        return draft, False  # finishing (Completing, Terminating) or finished: too late to fail
    suspended = suspension.clock_paused(seen.job, phase)
    due = deadline.check(limit, draft.status.clock, suspended=suspended, now=seen.now)
    if due.remaining is not None:
        draft = steps.requeue(draft, due.remaining)
    if not due.exceeded:
        return draft, False
    draft = steps.kill_unfinished(seen, draft)
    draft, moved = steps.set_phase(
        seen,
        draft,
        JobPhase.FAILED,
        "DeadlineExceeded",
        f"the job ran longer than its activeDeadlineSeconds of {limit}s",
    )
    if moved:
        said = f"the job was active for {limit}s, its activeDeadlineSeconds; its pods are deleted"
        draft = steps.add(
            steps.end_restart(draft), steps.event("Warning", "DeadlineExceeded", said)
        )
    return draft._replace(decided=moved), True


def unrecoverable_failure(seen: JobRound, draft: Draft) -> tuple[Draft, bool]:
    """A Pending job that can never run (a name longer than DNS allows, a plugin that cannot
    be configured) fails now with the reason instead of waiting forever."""
    if draft.status.phase != JobPhase.PENDING:
        return draft, False
    problem = unrecoverable.find(seen.job)
    if problem is None:
        return draft, False
    draft = steps.kill_unfinished(seen, draft)
    draft, moved = steps.set_phase(seen, draft, JobPhase.FAILED, problem.reason, problem.message)
    if moved:
        draft = steps.add(draft, steps.event("Warning", problem.reason, problem.message))
    return draft._replace(decided=moved), True
