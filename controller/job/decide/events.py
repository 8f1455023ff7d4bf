"""What asks the job for an action this reconcile: its Commands, the lifecycle events derived
from what is observed now, and the delayed actions that fell due.

Events are level-triggered (pods, the PodGroup, succeeded slots), except PodEvicted (a
deletion seen on the watch) and JobUpdated (the spec shape differs from the one last acted on).
A policy with a `timeout` starts a timer (`controller.job.decide.timers`) instead of acting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from controller.job.decide import commands, memory, podgroup, podview, policies, scaling, steps
from controller.job.decide import timers as timers_mod
from controller.job.decide.model import EventRecord
from controller.job.decide.policies import Decision, JobEvent
from controller.job.decide.steps import Draft, Effects, JobRound
from shared.models import PolicyAction, PolicyEvent


def from_commands(seen: JobRound) -> tuple[list[Decision], Effects]:
    """The decisions the job's Commands ask for, and the Commands consumed (deleted)."""
    outcome = commands.consume(seen.observed.commands, seen.job.uid)
    effects = Effects(
        delete_commands=tuple(outcome.delete),
        events=tuple(outcome.events),
        requeue=(steps.FOLLOW_UP,) if outcome.waiting else (),
    )
    return outcome.decisions, effects


def derive(seen: JobRound, draft: Draft) -> tuple[Draft, list[JobEvent]]:
    """The lifecycle events of this reconcile, in a stable order (and the draft remembering the
    spec shape acted on)."""
    actionable = [p for p in seen.pods if steps.actionable(draft, p)]
    events = policies.pod_events(actionable)
    for edge in seen.observed.pod_edges:
        if edge.kind != "deleted" or edge.by_controller:
            continue
        pod = podview.read(edge.pod)
        if pod.out_of_sync or not steps.owns(seen.job, pod) or pod.version < draft.status.version:
            continue
        if pod.phase == podview.SUCCEEDED:
            continue  # a finished pod deleted later is no failure (difference 8)
        current = seen.pods_by_name.get(pod.name)
        if current is not None and current.uid == pod.uid:
            continue
        events.append(policies.evicted_event(edge.pod))
    succeeded = steps.succeeded_now(seen, draft)
    for task in sorted(policies.completed_tasks(seen.job.spec.tasks, succeeded)):
        events.append(
            JobEvent(PolicyEvent.TASK_COMPLETED, f"every pod of task {task} succeeded", task)
        )
    for task in sorted(policies.failed_tasks(seen.job.spec.tasks, actionable)):
        events.append(
            JobEvent(
                PolicyEvent.TASK_FAILED,
                f"containers of task {task} restarted maxRetry times or more",
                task,
            )
        )
    if podgroup.phase_of(steps.pod_group_usable(seen, draft)) == "Unknown":
        events.append(JobEvent(PolicyEvent.UNKNOWN, "the PodGroup phase is Unknown"))
    change = scaled(seen, draft)
    draft = steps.remember(draft, {memory.SPEC_SHAPE: spec_shape(seen)})
    if change is not None:
        events.append(JobEvent(PolicyEvent.JOB_UPDATED, "the job was scaled"))
        said = f"the job was scaled: {change}"
        draft = steps.add(draft, steps.event("Normal", PolicyEvent.JOB_UPDATED.value, said))
    return draft, events


def spec_shape(seen: JobRound) -> scaling.SpecShape:
    return {
        "minAvailable": podgroup.job_min_available(seen.job),
        "replicas": {name: t.replica_count for name, t in seen.tasks.items()},
    }


def scaled(seen: JobRound, draft: Draft) -> str | None:
    """JobUpdated (difference 10): replicas or minAvailable changed since the shape last acted on
    (`scaling.spec_update`); the change, raised as a policy event and as a Normal Event on the
    job. `derive` remembers the shape as acted on."""
    shape = spec_shape(seen)
    remembered = memory.spec_shape(draft.memory)
    pg = steps.pod_group_usable(seen, draft)
    acted_gang: scaling.GangShape | None = None
    if remembered is None and pg is not None:
        spec = pg.get("spec") or {}
        acted_gang = {
            "minMember": int(spec.get("minMember") or 0),
            "minTaskMember": {str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
        }
    desired = seen.pod_group_spec
    new_gang: scaling.GangShape = {
        "minMember": int(desired["minMember"]),
        "minTaskMember": dict(desired["minTaskMember"]),
    }
    return scaling.spec_update(remembered, shape, acted_gang, new_gang)


def facts(seen: JobRound, draft: Draft) -> timers_mod.Facts:
    actionable = [p for p in seen.pods if steps.actionable(draft, p)]
    return timers_mod.Facts(
        pods_by_name={p.name: p.wire for p in seen.pods if steps.live(draft, p)},
        pod_group_phase=podgroup.phase_of(steps.pod_group_usable(seen, draft)),
        completed_tasks=policies.completed_tasks(
            seen.job.spec.tasks, steps.succeeded_now(seen, draft)
        ),
        failed_tasks=policies.failed_tasks(seen.job.spec.tasks, actionable),
    )


@dataclass
class PolicyStep:
    """The decisions due now, the timers kept and started, and the events saying so."""

    decisions: list[Decision]
    timers: dict[str, timers_mod.Timer]
    events: list[EventRecord] = field(default_factory=list)


def match(seen: JobRound, draft: Draft) -> tuple[Draft, list[Decision]]:
    """The lifecycle events matched to policies: due decisions, and timers for delayed ones."""
    draft, found = derive(seen, draft)
    step = policy_step(seen, found, draft.timers, facts(seen, draft))
    if step.timers != draft.timers:
        draft = draft._replace(timers=step.timers)
    draft = steps.add(draft, Effects(events=tuple(step.events)) if step.events else steps.NOTHING)
    return draft, step.decisions


def policy_step(
    seen: JobRound,
    found: list[JobEvent],
    current: Mapping[str, timers_mod.Timer],
    checked: timers_mod.Facts,
) -> PolicyStep:
    step = timers_mod.step(current, checked, seen.now)
    out = PolicyStep([fired for _, fired in step.fired], step.timers)
    fired_keys = {key for key, _ in step.fired}
    for ev in found:
        policy = policies.match_policy(seen.job, ev)
        if policy is None or policy.action is None:
            continue
        action = PolicyAction(policy.action)
        delay = policies.timeout_of(policy)
        if ev.event == PolicyEvent.POD_PENDING and delay is None:
            continue
        if delay is None:
            out.decisions.append(
                Decision(action, ev.detail, task=ev.task, pod=ev.pod, event=ev.event)
            )
            continue
        key = ev.timer_key
        if key in out.timers or key in fired_keys:
            if key in out.timers and out.timers[key].action != action:
                out.timers[key] = replace(out.timers[key], action=action)
            continue
        pod = seen.pods_by_name.get(ev.pod or "")
        start = timers_mod.timer_start(ev, pod.wire if pod is not None else None, seen.now)
        fire_at = start + delay
        if fire_at <= seen.now:
            out.decisions.append(
                Decision(
                    action,
                    f"{ev.detail} for {policy.timeout}",
                    task=ev.task,
                    pod=ev.pod,
                    event=ev.event,
                )
            )
            continue
        out.timers[key] = timers_mod.new_timer(ev, action, fire_at)
        out.events.append(
            EventRecord(
                "Normal",
                "ExecuteAction",
                f"Execute action {action.value} after {policy.timeout}: {ev.detail}",
            )
        )
    return out
