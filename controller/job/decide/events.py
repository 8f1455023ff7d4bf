"""What asks the job for an action this reconcile: its Commands, the lifecycle events derived
from what is observed now, and the delayed actions that fell due.

Events are level-triggered (pods, the PodGroup, succeeded slots), except PodEvicted (a
deletion seen on the watch) and JobUpdated (the spec shape differs from the one last acted on).
A policy with a `timeout` starts a timer (`controller.job.decide.timers`) instead of acting.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from controller.job.decide import commands, draft, memory, podgroup, podview, policies, scaling
from controller.job.decide import timers as timers_mod
from controller.job.decide.draft import Draft, JobRound
from controller.job.decide.model import EventRecord
from controller.job.decide.policies import Decision, JobEvent
from shared.models import PolicyAction, PolicyEvent


def from_commands(r: JobRound, d: Draft) -> list[Decision]:
    outcome = commands.consume(r.observed.commands, r.job.uid)
    if outcome.waiting:
        d.requeue.append(draft.FOLLOW_UP)
    d.plan.delete_commands.extend(outcome.delete)
    d.plan.events.extend(outcome.events)
    return outcome.decisions


def derive(r: JobRound, d: Draft) -> list[JobEvent]:
    """The lifecycle events of this reconcile, in a stable order."""
    actionable = [p for p in r.pods if draft.actionable(d, p)]
    events = policies.pod_events(p.wire for p in actionable)
    for edge in r.observed.pod_edges:
        pod = edge.pod
        if edge.kind != "deleted" or edge.by_controller or podview.is_out_of_sync(pod):
            continue
        if not draft.owned(r.job, pod) or podview.version_of(pod) < d.status.version:
            continue
        if podview.phase(pod) == podview.SUCCEEDED:
            continue  # a finished pod deleted later is no failure (difference 8)
        current = r.pods_by_name.get(podview.name_of(pod))
        if current is not None and current.uid == (podview.uid_of(pod) or None):
            continue
        events.append(policies.evicted_event(pod))
    succeeded = draft.succeeded_now(r, d)
    for task in sorted(policies.completed_tasks(r.job.spec.tasks, succeeded)):
        events.append(
            JobEvent(PolicyEvent.TASK_COMPLETED, f"every pod of task {task} succeeded", task)
        )
    by_task = draft.pods_by_task(actionable)
    for task in sorted(policies.failed_tasks(r.job.spec.tasks, by_task)):
        events.append(
            JobEvent(
                PolicyEvent.TASK_FAILED,
                f"containers of task {task} restarted maxRetry times or more",
                task,
            )
        )
    if podgroup.phase_of(draft.pod_group_usable(r, d)) == "Unknown":
        events.append(JobEvent(PolicyEvent.UNKNOWN, "the PodGroup phase is Unknown"))
    if scaled(r, d):
        events.append(JobEvent(PolicyEvent.JOB_UPDATED, "the job was scaled"))
    return events


def spec_shape(r: JobRound) -> scaling.SpecShape:
    return {
        "minAvailable": podgroup.job_min_available(r.job),
        "replicas": {name: t.replica_count for name, t in r.tasks.items()},
    }


def scaled(r: JobRound, d: Draft) -> bool:
    """JobUpdated (difference 10): replicas or minAvailable changed since the shape last acted on
    (`scaling.spec_update`); raised as a policy event and as a Normal Event on the job."""
    shape = spec_shape(r)
    remembered = d.memory.get(memory.SPEC_SHAPE)
    d.memory["specShape"] = shape
    pg = draft.pod_group_usable(r, d)
    acted_gang: scaling.GangShape | None = None
    if remembered is None and pg is not None:
        spec = pg.get("spec") or {}
        acted_gang = {
            "minMember": int(spec.get("minMember") or 0),
            "minTaskMember": {str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
        }
    desired = podgroup.desired_spec(r.job, r.observed.priority_values)
    new_gang: scaling.GangShape = {
        "minMember": int(desired["minMember"]),
        "minTaskMember": dict(desired["minTaskMember"]),
    }
    change = scaling.spec_update(remembered, shape, acted_gang, new_gang)
    if change is None:
        return False
    d.plan.events.append(
        EventRecord("Normal", PolicyEvent.JOB_UPDATED.value, f"the job was scaled: {change}")
    )
    return True


def facts(r: JobRound, d: Draft) -> timers_mod.Facts:
    actionable = [p for p in r.pods if draft.actionable(d, p)]
    return timers_mod.Facts(
        pods_by_name={p.name: p.wire for p in r.pods if draft.live(d, p)},
        pod_group_phase=podgroup.phase_of(draft.pod_group_usable(r, d)),
        completed_tasks=policies.completed_tasks(r.job.spec.tasks, draft.succeeded_now(r, d)),
        failed_tasks=policies.failed_tasks(r.job.spec.tasks, draft.pods_by_task(actionable)),
    )


@dataclass
class PolicyStep:
    """The decisions due now, the timers kept and started, and the events saying so."""

    decisions: list[Decision]
    timers: dict[str, timers_mod.Timer]
    events: list[EventRecord] = field(default_factory=list)


def match(r: JobRound, d: Draft) -> list[Decision]:
    """The lifecycle events matched to policies: due decisions, and timers for delayed ones."""
    found = derive(r, d)
    step = policy_step(r, found, d.timers, facts(r, d))
    d.timers = step.timers
    d.plan.events.extend(step.events)
    return step.decisions


def policy_step(
    r: JobRound,
    found: list[JobEvent],
    current: dict[str, timers_mod.Timer],
    checked: timers_mod.Facts,
) -> PolicyStep:
    step = timers_mod.step(current, checked, r.now)
    out = PolicyStep([d for _, d in step.fired], step.timers)
    fired_keys = {key for key, _ in step.fired}
    for ev in found:
        policy = policies.match_policy(r.job, ev)
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
        pod = r.pods_by_name.get(ev.pod or "")
        start = timers_mod.timer_start(ev, pod.wire if pod is not None else None, r.now)
        fire_at = start + delay
        if fire_at <= r.now:
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
