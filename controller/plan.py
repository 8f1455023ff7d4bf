"""`reconcile(observed, settings) -> Plan`: every decision about one job, as a pure function.

Order within one reconcile:
1. a new job becomes Pending;
2. Commands are validated and consumed; lifecycle events are derived and matched to policies;
   timers are cancelled, fired or started;
3. the most decisive due action runs through the phase table (`controller.state`);
4. the current phase is synced: volumes, plugin objects, the PodGroup, pods (Pending, Running),
   or the pods are drained (Aborting, Completing, Terminating), or cleaned up (terminal);
5. count-driven transitions, the success policy after failure policies;
6. the status, the memory for the next round, and when to look again.

`Plan.memory` (handed back as `Observed.memory`; losing it is safe, only timers restart):
- `specShape`: `{"minAvailable": n, "replicas": {task: n}}` last acted on, to raise JobUpdated;
- `timers`: `{key: {event, action, fireAt, task, pod, podUid, detail}}`, key
  `<event>/pod/<pod>`, `<event>/task/<task>` or `<event>`;
- `deletedPodGroupUid`: the PodGroup a full restart deleted, so a stale cache copy of it never
  opens the gang gate;
- `sshKey`: `{private, public}` generated for the ssh plugin until its Secret exists.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from controller import (
    attempts,
    blocked,
    commands,
    deadline,
    dependson,
    gang,
    kueue,
    partitions,
    podgroup,
    podview,
    policies,
    restarts,
    retrybudget,
    scaling,
    state,
    successpolicy,
    suspension,
    typedconditions,
    unrecoverable,
    volumes,
)
from controller import status as status_mod
from controller import ttl as ttl_mod
from controller.model import EventRecord, ObjectRef, Observed, Plan, PlanSettings, WireObject
from controller.plugins import JobPlugin, build_plugins
from controller.plugins import ssh as ssh_plugin
from controller.podgen import PodContext, build_pod
from controller.policies import Decision, JobEvent
from controller.state import Kill, Transition
from shared import labels
from shared.models import Job, JobPhase, PolicyAction, PolicyEvent, TaskSpec

PVC_RECHECK = timedelta(seconds=10)
# A job the scheduler does not admit is looked at again this often (its Queue is not watched).
BLOCKED_RECHECK = timedelta(seconds=10)
# After a phase change, look again soon even if no watch event arrives.
FOLLOW_UP = timedelta(seconds=1)
PLUGIN_KINDS = ("Service", "ConfigMap", "NetworkPolicy", "Secret")

_TARGETED = frozenset(
    {PolicyAction.RESTART_TASK, PolicyAction.RESTART_POD, PolicyAction.RESTART_PARTITION}
)
# Phases in which `activeDeadlineSeconds` can fail the job (suspended ones stop its clock).
DEADLINE_PHASES = frozenset(
    {JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING, JobPhase.ABORTING, JobPhase.ABORTED}
)
MEMORY_TIMERS = "timers"
MEMORY_SHAPE = "specShape"
MEMORY_DELETED_POD_GROUP = "deletedPodGroupUid"


def reconcile(observed: Observed, settings: PlanSettings | None = None) -> Plan:
    """Plan everything for one job. Pure: no clock, no network, no randomness (the ssh key pair
    comes with `observed`)."""
    return _Planner(observed, settings or PlanSettings()).run()


@dataclass(frozen=True)
class _Target:
    tasks: frozenset[str]
    pods: frozenset[str]


class _Planner:
    def __init__(self, observed: Observed, settings: PlanSettings) -> None:
        self.observed = observed
        self.settings = settings
        # Kubernetes times are UTC; a naive `now` is taken to be UTC too.
        self.now: datetime = (
            observed.now if observed.now.tzinfo else observed.now.replace(tzinfo=UTC)
        )
        self.raw_job = observed.job
        self.job = Job.from_wire(observed.job)
        self.plan = Plan()
        self.memory: dict[str, Any] = copy.deepcopy(dict(observed.memory or {}))
        self.old_status: dict[str, Any] = copy.deepcopy(dict(observed.job.get("status") or {}))
        old_state = self.old_status.get("state") or {}
        self.initial_phase = state.parse_phase(old_state.get("phase"))
        self.phase: JobPhase = self.initial_phase or JobPhase.PENDING
        self.reason: str | None = old_state.get("reason")
        self.message: str | None = old_state.get("message")
        self.last_transition: str | None = old_state.get("lastTransitionTime")
        self.conditions: list[dict[str, Any]] = list(self.old_status.get("conditions") or [])
        self.running_duration: str | None = self.old_status.get("runningDuration")
        self.version = int(self.old_status.get("version") or 0)
        self.retry_count = int(self.old_status.get("retryCount") or 0)
        self.max_retry = (
            self.job.spec.max_retry
            if self.job.spec.max_retry is not None
            else labels.DEFAULT_MAX_RETRY
        )
        self.controlled: dict[str, str] = dict(self.old_status.get("controlledResources") or {})
        self.restart = restarts.decode(self.controlled.get(restarts.RECORD_KEY))
        self.recorded_succeeded = status_mod.parse_succeeded_indexes(
            self.old_status.get("succeededIndexes")
        )
        self.tasks: dict[str, TaskSpec] = {str(t.name): t for t in self.job.spec.tasks}
        # vcjob's lifecycle extensions (docs/lifecycle.md).
        self.retry_policy = self.job.spec.retry_policy
        self.restart_counts: dict[str, int] = {
            k: int(v) for k, v in (self.old_status.get("restartCounts") or {}).items()
        }
        self.attempts: list[dict[str, Any]] = list(self.old_status.get("attempts") or [])
        self.clock = deadline.RunClock.from_status(self.old_status)
        self.missing_pvcs: list[str] = []
        self._record_deleted_successes()
        self.all_pods_by_name = {podview.name_of(p): p for p in observed.pods}
        self.pods = [p for p in observed.pods if self._owned(p)]
        self.pods_by_name = {podview.name_of(p): p for p in self.pods}
        self.deleting: set[str] = set()
        self.created: list[WireObject] = []
        self.pod_group = observed.pod_group
        self.pod_group_gone = False
        self.timers: dict[str, dict[str, Any]] = dict(self.memory.get(MEMORY_TIMERS) or {})
        self.requeue: list[timedelta] = []
        self._plugins: list[JobPlugin] | None = None
        self.transitioned = False
        # A transition with effects was decided: this plan only writes it (and its events).
        self.decided = False
        self.kueue = self._kueue_steps()
        # Suspended for this plan: spec.suspend, or Kueue suspends the job in this very plan (a
        # job Kueue unsuspends gets its pods in the next plan, once spec.suspend is false).
        self.suspended = suspension.is_suspended(self.raw_job) or self.kueue.set_suspend is True

    # ------------------------------------------------------------------ helpers

    def _record_deleted_successes(self) -> None:
        """A succeeded pod deleted before any status recorded it still counts (fix 8)."""
        for edge in self.observed.pod_edges:
            pod = edge.pod
            if edge.kind != "deleted" or podview.phase(pod) != podview.SUCCEEDED:
                continue
            if podview.is_out_of_sync(pod):
                continue  # replaced by a restart: its success no longer counts
            if not self._owned(pod) or podview.version_of(pod) < self.version:
                continue
            task, index = podview.task_of(pod), podview.index_of(pod)
            if task is not None and index is not None:
                self.recorded_succeeded.setdefault(task, set()).add(index)

    def _owned(self, pod: Mapping[str, Any]) -> bool:
        owner = podview.controller_uid(pod)
        if owner is not None:
            return owner == self.job.uid
        return podview.labels_of(pod).get(labels.JOB_NAME_KEY) == self.job.name

    def _live(self, pod: Mapping[str, Any]) -> bool:
        """Exists and is not going away (not deleted, not being deleted by this plan)."""
        return not podview.is_deleting(pod) and podview.name_of(pod) not in self.deleting

    def _actionable(self, pod: Mapping[str, Any]) -> bool:
        """A pod whose events can still drive policies: live, ours to act on, current version."""
        return (
            self._live(pod)
            and not podview.is_out_of_sync(pod)
            and podview.version_of(pod) >= self.version
        )

    def _set_phase(self, to: JobPhase, reason: str, message: str) -> bool:
        """Move to `to`; False (nothing changes) when the phase already changed in this plan:
        every phase is written on its own, so watchers see each one, and the next reconcile
        continues from the written phase."""
        if to == self.phase and (self.initial_phase is not None or self.transitioned):
            self.reason, self.message = reason, message
            return True
        if self.transitioned:
            self.requeue.append(FOLLOW_UP)
            return False
        when = status_mod.rfc3339(self.now)
        previous = self.phase
        self.phase, self.reason, self.message = to, reason, message
        self.last_transition = when
        self.conditions = status_mod.with_condition(self.conditions, to.value, when)
        self.running_duration = status_mod.running_duration(self.raw_job, self.now)
        first = self.initial_phase is None and not self.transitioned
        self.transitioned = True
        # A new job has no phase yet: its first event names where it starts, not "Pending -> …".
        change = f"job phase {to.value}" if first else f"job phase {previous.value} -> {to.value}"
        self.plan.events.append(EventRecord("Normal", reason, f"{change}: {message}"))
        return True

    def _kill(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """Mark then delete: our own deletions never come back as PodEvicted."""
        for pod in pods:
            name = podview.name_of(pod)
            if podview.is_deleting(pod) or name in self.deleting:
                continue
            ref = ObjectRef("v1", "Pod", self.job.namespace, name, podview.uid_of(pod) or None)
            self.plan.annotate_out_of_sync.append(ref)
            self.plan.delete.append(ref)
            self.deleting.add(name)

    def _kill_unfinished(self) -> None:
        self._kill(p for p in self.pods if not podview.is_finished(p))

    def _delete_pod_group(self) -> None:
        pg = self.pod_group
        if pg is None or self.pod_group_gone:
            return
        uid = podview.uid_of(pg) or None
        if uid is not None and self.memory.get(MEMORY_DELETED_POD_GROUP) == uid:
            self.pod_group_gone = True
            return
        self.plan.delete.append(
            ObjectRef(
                labels.SCHEDULING_API_VERSION,
                labels.PODGROUP_KIND,
                self.job.namespace,
                podview.name_of(pg),
                uid,
            )
        )
        if uid is not None:
            self.memory[MEMORY_DELETED_POD_GROUP] = uid
        self.pod_group_gone = True

    def _pod_group_usable(self) -> WireObject | None:
        """The observed PodGroup unless it is the one this controller deleted (stale cache)."""
        pg = self.pod_group
        if pg is None or self.pod_group_gone:
            return None
        if self.memory.get(MEMORY_DELETED_POD_GROUP) == podview.uid_of(pg):
            return None
        return pg

    @property
    def plugins(self) -> list[JobPlugin]:
        if self._plugins is None:
            self._plugins, unknown = build_plugins(
                self.job,
                self.settings,
                self.observed.children,
                self.memory,
                self.observed.ssh_key,
            )
            for name in unknown:
                self.plan.events.append(
                    EventRecord("Warning", "PluginError", f"unknown plugin {name} is ignored")
                )
        return self._plugins

    # ------------------------------------------------------------------ succeeded slots

    def _succeeded_now(self) -> dict[str, set[int]]:
        """Per task, indexes < replicas whose pod succeeded, or whose succeeded pod was deleted
        (recorded earlier and not recreated: fix 8)."""
        out: dict[str, set[int]] = {}
        for task_name, task in self.tasks.items():
            done: set[int] = set()
            for i in range(task.replica_count):
                name = labels.pod_name(self.job.name, task_name, i)
                pod = self.pods_by_name.get(name)
                if pod is not None and self._live(pod):
                    if podview.phase(pod) == podview.SUCCEEDED:
                        done.add(i)
                elif pod is None and i in self.recorded_succeeded.get(task_name, set()):
                    done.add(i)
            if done:
                out[task_name] = done
        return out

    def _slots(self) -> tuple[bool, int]:
        """(every slot finished, succeeded slots whose pod no longer exists)."""
        all_finished = True
        ghost_succeeded = 0
        created = {podview.name_of(p) for p in self.created}
        for task_name, task in self.tasks.items():
            for i in range(task.replica_count):
                name = labels.pod_name(self.job.name, task_name, i)
                pod = self.pods_by_name.get(name)
                if pod is None:
                    if name not in created and i in self.recorded_succeeded.get(task_name, set()):
                        ghost_succeeded += 1
                    else:
                        all_finished = False
                elif not self._live(pod) or not podview.is_finished(pod):
                    all_finished = False
        return all_finished, ghost_succeeded

    def _tally(self) -> status_mod.PodTally:
        tally = status_mod.PodTally()
        for pod in self.pods:
            # A decision only writes the status: the pods it will kill are still as they are.
            going = podview.is_deleting(pod) or (
                podview.name_of(pod) in self.deleting and not self.decided
            )
            tally.add(podview.task_of(pod), podview.phase(pod), terminating=going)
        for pod in self.created:
            tally.add(podview.task_of(pod), podview.PENDING, terminating=False)
        return tally

    # ------------------------------------------------------------------ run

    def run(self) -> Plan:
        if podview.metadata(self.raw_job).get("deletionTimestamp"):
            # The garbage collector removes the children; nothing may be created now.
            self.plan.memory = self.memory
            return self.plan
        if self.initial_phase is None:
            # A new job: Pending is written first; commands and policies act from the next
            # reconcile on.
            self._set_phase(
                JobPhase.PENDING, "JobCreated", "the job was accepted and waits for its pods"
            )
        elif not (self._deadline_passed() or self._unrecoverable()):
            # Neither failed the job: commands and policies decide.
            decisions = self._commands()
            if (self.phase in state.ACTIVE and not self.suspended) or (
                self.phase == JobPhase.RESTARTING
            ):
                decisions += self._policy_decisions()
            else:
                self.timers = {}
            decision = self._choose(decisions)
            if decision is not None:
                self._execute(decision, decisions)

        if self.decided:
            self._keep_only_the_decision()
        else:
            self._sync_phase()
            if self.phase in state.TERMINAL and not self.transitioned:
                self._finish()
            self._apply_kueue()
        self._finalize()
        return self.plan

    # ------------------------------------------------------------------ suspension and Kueue

    def _kueue_steps(self) -> kueue.KueueSteps:
        if not self.settings.kueue:
            return kueue.KueueSteps()
        finished: bool | None = None
        if self.initial_phase == JobPhase.COMPLETED:
            finished = True
        elif self.initial_phase in (JobPhase.FAILED, JobPhase.TERMINATED):
            finished = False
        return kueue.plan_kueue(
            self.raw_job,
            self.observed.workload,
            self.observed.resource_flavors,
            priority_values=self.observed.priority_values,
            finished=finished,
            finish_message=f"the job is {self.phase.value}: {self.message or ''}".rstrip(": "),
            pods_gone=all(podview.is_finished(p) and not podview.is_deleting(p) for p in self.pods),
            now=status_mod.rfc3339(self.now),
        )

    def _apply_kueue(self) -> None:
        steps = self.kueue
        if steps.create_workload is not None:
            self.plan.create.insert(0, steps.create_workload)
        if steps.set_suspend is not None:
            patch = self.plan.job_spec_patch or {}
            patch.setdefault("spec", {})["suspend"] = steps.set_suspend
            self.plan.job_spec_patch = patch
            # Our own write's echo does not wake the job: look again at once.
            self.requeue.append(FOLLOW_UP)
        self.plan.workload_status = steps.workload_status

    def _suspended_message(self) -> str:
        return (
            self.kueue.waiting_message
            or "the job is suspended (spec.suspend is true): it has no pods until it is resumed"
        )

    def _sync_suspended(self) -> None:
        """No pods while suspended: the unfinished ones are deleted (finished pods, the retry
        count and the version stay), the PodGroup too (the gang is admitted afresh on resume);
        the job waits in Pending with reason Suspended."""
        self._kill_unfinished()
        self._delete_pod_group()
        self.timers = {}
        message = self._suspended_message()
        if (self.phase, self.reason, self.message) != (
            JobPhase.PENDING,
            suspension.STATE_REASON,
            message,
        ):
            self._set_phase(JobPhase.PENDING, suspension.STATE_REASON, message)

    def _deadline_passed(self) -> bool:
        """`spec.activeDeadlineSeconds` passed while the job ran: it fails (its unfinished pods
        are deleted by the reconciles after this decision)."""
        limit = self.job.spec.active_deadline_seconds
        if limit is None or self.phase not in DEADLINE_PHASES:
            return False  # finishing (Completing, Terminating) or finished: too late to fail
        suspended = suspension.clock_paused(self.job, self.phase)
        due = deadline.check(limit, self.clock, suspended=suspended, now=self.now)
        if due.remaining is not None:
            self.requeue.append(due.remaining)
        if not due.exceeded:
            return False
        self._kill_unfinished()
        self.decided = self._set_phase(
            JobPhase.FAILED,
            "DeadlineExceeded",
            f"the job ran longer than its activeDeadlineSeconds of {limit}s",
        )
        if self.decided:
            self._end_restart()
            self.plan.events.append(
                EventRecord(
                    "Warning",
                    "DeadlineExceeded",
                    f"the job was active for {limit}s, its activeDeadlineSeconds; "
                    "its pods are deleted",
                )
            )
        return True

    def _unrecoverable(self) -> bool:
        """A Pending job that can never run (a name longer than DNS allows, a plugin that cannot
        be configured) fails now with the reason instead of waiting forever."""
        if self.phase != JobPhase.PENDING:
            return False
        problem = unrecoverable.find(self.job)
        if problem is None:
            return False
        self._kill_unfinished()
        self.decided = self._set_phase(JobPhase.FAILED, problem.reason, problem.message)
        if self.decided:
            self.plan.events.append(EventRecord("Warning", problem.reason, problem.message))
        return True

    def _keep_only_the_decision(self) -> None:
        """A transition with effects is persisted before any of them: this plan writes the
        status (phase, reason, retryCount, version, the restart record) and its events; the
        kills and deletions are planned again from the written phase by the next reconciles,
        which therefore survive any failed write or a crash in between."""
        self.plan.annotate_out_of_sync = []
        self.plan.delete = []
        self.plan.create = []
        self.plan.update = []
        self.plan.job_spec_patch = None
        self.created = []

    # ------------------------------------------------------------------ commands

    def _commands(self) -> list[Decision]:
        outcome = commands.consume(self.observed.commands, self.job.uid)
        if outcome.waiting:
            self.requeue.append(FOLLOW_UP)
        self.plan.delete_commands.extend(outcome.delete)
        self.plan.events.extend(outcome.events)
        return outcome.decisions

    # ------------------------------------------------------------------ policies

    def _events(self) -> list[JobEvent]:
        actionable = [p for p in self.pods if self._actionable(p)]
        events = policies.pod_events(actionable)
        for edge in self.observed.pod_edges:
            pod = edge.pod
            if edge.kind != "deleted" or edge.by_controller or podview.is_out_of_sync(pod):
                continue
            if not self._owned(pod) or podview.version_of(pod) < self.version:
                continue
            if podview.phase(pod) == podview.SUCCEEDED:
                continue  # a finished pod deleted later is no failure (fix 8)
            current = self.pods_by_name.get(podview.name_of(pod))
            if current is not None and podview.uid_of(current) == podview.uid_of(pod):
                continue
            events.append(policies.evicted_event(pod))
        succeeded = self._succeeded_now()
        for task in sorted(policies.completed_tasks(self.job.spec.tasks, succeeded)):
            events.append(
                JobEvent(PolicyEvent.TASK_COMPLETED, f"every pod of task {task} succeeded", task)
            )
        by_task = self._live_pods_by_task(actionable)
        for task in sorted(policies.failed_tasks(self.job.spec.tasks, by_task)):
            events.append(
                JobEvent(
                    PolicyEvent.TASK_FAILED,
                    f"containers of task {task} restarted maxRetry times or more",
                    task,
                )
            )
        if podgroup.phase_of(self._pod_group_usable()) == "Unknown":
            events.append(JobEvent(PolicyEvent.UNKNOWN, "the PodGroup phase is Unknown"))
        if self._scaled():
            events.append(JobEvent(PolicyEvent.JOB_UPDATED, "the job was scaled"))
        return events

    def _spec_shape(self) -> scaling.SpecShape:
        return {
            "minAvailable": podgroup.job_min_available(self.job),
            "replicas": {name: t.replica_count for name, t in self.tasks.items()},
        }

    def _scaled(self) -> bool:
        """JobUpdated (fix 10): replicas or minAvailable changed since the shape last acted on
        (`scaling.spec_update`); raised as a policy event and as a Normal Event on the job."""
        shape = self._spec_shape()
        remembered: scaling.SpecShape | None = self.memory.get(MEMORY_SHAPE)
        self.memory[MEMORY_SHAPE] = shape
        pg = self._pod_group_usable()
        acted_gang: scaling.GangShape | None = None
        if remembered is None and pg is not None:
            spec = pg.get("spec") or {}
            acted_gang = {
                "minMember": int(spec.get("minMember") or 0),
                "minTaskMember": {
                    str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()
                },
            }
        desired = podgroup.desired_spec(self.job, self.observed.priority_values)
        new_gang: scaling.GangShape = {
            "minMember": int(desired["minMember"]),
            "minTaskMember": dict(desired["minTaskMember"]),
        }
        change = scaling.spec_update(remembered, shape, acted_gang, new_gang)
        if change is None:
            return False
        self.plan.events.append(
            EventRecord("Normal", PolicyEvent.JOB_UPDATED.value, f"the job was scaled: {change}")
        )
        return True

    def _live_pods_by_task(
        self, pods: Iterable[Mapping[str, Any]]
    ) -> dict[str, list[Mapping[str, Any]]]:
        out: dict[str, list[Mapping[str, Any]]] = {}
        for pod in pods:
            task = podview.task_of(pod)
            if task is not None:
                out.setdefault(task, []).append(pod)
        return out

    def _facts(self) -> policies.Facts:
        actionable = [p for p in self.pods if self._actionable(p)]
        return policies.Facts(
            pods_by_name={podview.name_of(p): p for p in self.pods if self._live(p)},
            pod_group_phase=podgroup.phase_of(self._pod_group_usable()),
            completed_tasks=policies.completed_tasks(self.job.spec.tasks, self._succeeded_now()),
            failed_tasks=policies.failed_tasks(
                self.job.spec.tasks, self._live_pods_by_task(actionable)
            ),
        )

    def _policy_decisions(self) -> list[Decision]:
        events = self._events()
        step = policies.step_timers(self.timers, self._facts(), self.now)
        self.timers = step.timers
        decisions = [d for _, d in step.fired]
        fired_keys = {key for key, _ in step.fired}
        for ev in events:
            policy = policies.match_policy(self.job, ev)
            if policy is None or policy.action is None:
                continue
            action = PolicyAction(policy.action)
            delay = policies.timeout_of(policy)
            if ev.event == PolicyEvent.POD_PENDING and delay is None:
                continue
            if delay is None:
                decisions.append(
                    Decision(action, ev.detail, task=ev.task, pod=ev.pod, event=ev.event)
                )
                continue
            key = ev.timer_key
            if key in self.timers or key in fired_keys:
                if key in self.timers and self.timers[key].get("action") != action.value:
                    self.timers[key]["action"] = action.value
                continue
            start = policies.timer_start(ev, self.pods_by_name.get(ev.pod or ""), self.now)
            fire_at = start + delay
            if fire_at <= self.now:
                decisions.append(
                    Decision(
                        action,
                        f"{ev.detail} for {policy.timeout}",
                        task=ev.task,
                        pod=ev.pod,
                        event=ev.event,
                    )
                )
                continue
            self.timers[key] = policies.new_timer(ev, action.value, fire_at)
            self.plan.events.append(
                EventRecord(
                    "Normal",
                    "ExecuteAction",
                    f"Execute action {action.value} after {policy.timeout}: {ev.detail}",
                )
            )
        return decisions

    @staticmethod
    def _choose(decisions: list[Decision]) -> Decision | None:
        """The most decisive action (commands win ties)."""
        if not decisions:
            return None
        return max(decisions, key=lambda d: (state.ACTION_RANK[d.action], d.command))

    # ------------------------------------------------------------------ actions

    def _targets(self, decision: Decision, decisions: Iterable[Decision] = ()) -> _Target:
        tasks: set[str] = set()
        pods: set[str] = set()
        for d in [decision, *decisions]:
            if d.action not in _TARGETED:
                continue
            if d.action == PolicyAction.RESTART_TASK and d.task:
                tasks.add(d.task)
            elif d.action == PolicyAction.RESTART_POD and d.pod:
                pods.add(d.pod)
            elif d.action == PolicyAction.RESTART_POD and d.task:
                tasks.add(d.task)
            elif d.action == PolicyAction.RESTART_PARTITION:
                pods |= partitions.partition_pods(self.pods, d.task, d.pod)
        return _Target(frozenset(tasks), frozenset(pods))

    def _execute(self, decision: Decision, decisions: list[Decision]) -> None:
        action = decision.action
        # Targeted restarts due together become one restart (one retry consumed).
        target = self._targets(decision, decisions if action in _TARGETED else ())
        if action == PolicyAction.RESTART_PARTITION and not target.pods:
            return  # no partition to restart: Volcano does nothing at all
        if action in (PolicyAction.RESTART_TASK, PolicyAction.RESTART_POD) and not (
            target.tasks or target.pods
        ):
            # A targeted restart caused by a job-wide event restarts the whole job.
            action = PolicyAction.RESTART_JOB
        transition = state.transition_for(self.phase, action)
        source = "CommandIssued" if decision.command else "PolicyAction"
        if transition is None:
            if not decision.command:
                return  # level-triggered causes come back; only commands are reported
            self.plan.events.append(
                EventRecord(
                    "Normal",
                    "ActionIgnored",
                    f"{action.value} does nothing in phase {self.phase.value} ({decision.cause})",
                )
            )
            return
        self.plan.events.append(
            EventRecord("Normal", "ExecuteAction", f"Start to execute action {action.value}")
        )
        retry_before = self.retry_count
        cause = retrybudget.classify(decision, self._pod_of(decision.pod))
        charge = retrybudget.charge(cause, self.retry_policy)
        # The kills only shape the status written with the decision (counters, succeeded
        # indexes); the plan drops them and the next reconciles carry them out.
        self._kill_for(transition, target, retry_before, charged=charge.max_retry)
        if transition.counts_retry and charge.max_retry:
            self.retry_count += 1
        if transition.bump_version:
            self.version += 1
        self._forget_timers(transition, target)
        if transition.to == JobPhase.RESTARTING:
            self._count_restart(cause)
            backoff = 0.0
            if transition.counts_retry and charge.counted:
                counted = self.restart_counts.get("application", 0) + self.restart_counts.get(
                    "infrastructure", 0
                )
                backoff = retrybudget.backoff_seconds(self.retry_policy, counted, self.job.uid)
            when = status_mod.rfc3339(self.now)
            self.attempts = attempts.end(
                self.attempts,
                when,
                cause=cause.value,
                reason=f"{action.value} because {decision.cause}",
                failed=attempts.failed_pods(self.pods),
                backoff_seconds=backoff,
            )
            not_before = (
                status_mod.rfc3339(self.now + timedelta(seconds=backoff)) if backoff else None
            )
            self.restart = restarts.RestartRecord(
                action, target.tasks, target.pods, cause.value, not_before
            )
            self.controlled[restarts.RECORD_KEY] = restarts.encode(self.restart)
        else:
            self.restart = None
            self.controlled.pop(restarts.RECORD_KEY, None)
        message = f"{action.value} because {decision.cause}"
        self.decided = self._set_phase(transition.to, source, message)

    def _pod_of(self, name: str | None) -> Mapping[str, Any] | None:
        """The pod an event is about, as last seen (a deleted pod from its watch edge)."""
        if not name:
            return None
        if name in self.all_pods_by_name:
            return self.all_pods_by_name[name]
        return next(
            (e.pod for e in self.observed.pod_edges if podview.name_of(e.pod) == name), None
        )

    def _count_restart(self, cause: retrybudget.Cause) -> None:
        key = cause.value.lower()
        self.restart_counts[key] = self.restart_counts.get(key, 0) + 1

    def _kill_for(
        self, transition: Transition, target: _Target, retry_before: int, *, charged: bool
    ) -> None:
        if transition.kill == Kill.ALL:
            keep_finished = (
                transition.counts_retry
                and charged
                and state.is_last_retry(retry_before, self.max_retry)
            )
            self._kill(p for p in self.pods if not (keep_finished and podview.is_finished(p)))
            self.recorded_succeeded = {}
        elif transition.kill == Kill.TARGET:
            chosen = [
                p
                for p in self.pods
                if podview.task_of(p) in target.tasks or podview.name_of(p) in target.pods
            ]
            self._kill(chosen)
            for pod in chosen:
                task, index = podview.task_of(pod), podview.index_of(pod)
                if task is not None and index is not None:
                    self.recorded_succeeded.get(task, set()).discard(index)
            for task in target.tasks:
                self.recorded_succeeded.pop(task, None)
        elif transition.kill == Kill.UNFINISHED:
            self._kill_unfinished()
        elif transition.kill == Kill.NOT_SUCCEEDED:
            self._kill(p for p in self.pods if podview.phase(p) != podview.SUCCEEDED)

    def _forget_timers(self, transition: Transition, target: _Target) -> None:
        if transition.kill != Kill.TARGET:
            self.timers = {}
            return
        self.timers = {
            k: t
            for k, t in self.timers.items()
            if t.get("task") not in target.tasks and t.get("pod") not in target.pods
        }

    # ------------------------------------------------------------------ phase sync

    def _sync_phase(self) -> None:
        # Finish deletions an earlier plan started (annotated, delete not yet applied).
        self._kill(p for p in self.pods if podview.is_out_of_sync(p))
        if self.phase == JobPhase.RESTARTING and self._sync_restarting():
            return  # Pending or Failed is written before anything is created
        if self.phase in state.ACTIVE and self.suspended:
            self._sync_suspended()
        elif self.phase in state.ACTIVE:
            self._sync_active()
        elif self.phase in state.DRAINING:
            self._sync_draining()
        elif self.phase == JobPhase.ABORTED:
            self._kill_unfinished()
            self._delete_pod_group()
        if self.phase not in state.TERMINAL:
            self._sync_children(
                create=self.phase in (JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING)
            )
        if self.phase not in state.ACTIVE and self.phase != JobPhase.RESTARTING:
            self.timers = {}

    def _sync_restarting(self) -> bool:
        """Carry out the persisted restart: delete the pods it replaces (and, for a full
        restart or a resume, the PodGroup), then write Pending once they are gone. True when
        the phase moved on."""
        if state.retries_exhausted(self.retry_count, self.max_retry):
            # The last retry keeps finished pods (their logs); nothing else keeps running
            # under a Failed job (fix 4).
            self._kill_unfinished()
            if self._set_phase(
                JobPhase.FAILED,
                "MaxRetryExceeded",
                f"the job was restarted {self.retry_count} times, maxRetry is {self.max_retry}",
            ):
                self._end_restart()
                return True
            return False
        record = self.restart
        if (
            record is not None
            and record.cause == retrybudget.Cause.INFRASTRUCTURE
            and retrybudget.infrastructure_exhausted(
                self.restart_counts.get("infrastructure", 0), self.retry_policy
            )
        ):
            self._kill_unfinished()
            allowed = self.retry_policy.infrastructure_retries if self.retry_policy else 0
            if self._set_phase(
                JobPhase.FAILED,
                "InfrastructureRetriesExceeded",
                f"the job was restarted {self.restart_counts.get('infrastructure', 0)} times "
                f"because of the infrastructure, retryPolicy.infrastructureRetries is {allowed}",
            ):
                self._end_restart()
                return True
            return False
        self._kill(p for p in self.pods if restarts.is_victim(record, p, self.version))
        needs_new_group = record is None or record.needs_new_pod_group
        if needs_new_group:
            self._delete_pod_group()
        group_gone = not needs_new_group or self.observed.pod_group is None
        pods_gone = all(self._live(p) and not podview.is_out_of_sync(p) for p in self.pods)
        not_before = status_mod.parse_time(record.not_before if record else None)
        if group_gone and pods_gone and not_before is not None and self.now < not_before:
            self.requeue.append(not_before - self.now)  # the backoff before recreating
            return False
        if (
            group_gone
            and pods_gone
            and self._set_phase(
                JobPhase.PENDING, "Restarted", "the restarted pods are being recreated"
            )
        ):
            self._end_restart()
            self.attempts = attempts.start(self.attempts, status_mod.rfc3339(self.now))
            return True
        return False

    def _end_restart(self) -> None:
        self.restart = None
        self.controlled.pop(restarts.RECORD_KEY, None)

    def _sync_draining(self) -> None:
        self._kill_unfinished()
        if self.phase == JobPhase.ABORTING:
            self._delete_pod_group()
        if not self.transitioned and state.draining_done(self._tally().counts()):
            final = state.DRAINING[self.phase]
            self._set_phase(final, self.reason or final.value, self.message or final.value)

    def _sync_active(self) -> None:
        if self.reason == suspension.STATE_REASON and self.phase == JobPhase.PENDING:
            self._set_phase(
                JobPhase.PENDING,
                "Resumed",
                "spec.suspend is false: the pods of the same attempt are created again",
            )
        vplan = volumes.plan_volumes(
            self.job,
            list(self.raw_job.get("spec", {}).get("volumes") or []),
            self.observed.children,
            self.observed.missing_pvcs,
        )
        self.controlled.update(vplan.controlled)
        if vplan.missing:
            # fix 15: wait for the user's PVC, never terminate because of it.
            self.missing_pvcs = list(vplan.missing)
            names = ", ".join(vplan.missing)
            if self.phase == JobPhase.PENDING:
                self._set_phase(
                    JobPhase.PENDING,
                    "PVCNotFound",
                    f"PersistentVolumeClaim {names} not found; the job stays Pending until it "
                    "exists",
                )
            self.requeue.append(PVC_RECHECK)
            return
        if self.reason == "PVCNotFound":
            self._set_phase(JobPhase.PENDING, "PVCFound", "every PersistentVolumeClaim exists")
        self.plan.create.extend(vplan.creates)
        if vplan.spec_volumes is not None:
            self.plan.job_spec_patch = {"spec": {"volumes": vplan.spec_volumes}}
        claims = vplan.claims

        pg = self._sync_pod_group()
        if (warning := podgroup.pending_warning(self.job, pg)) is not None:
            self.plan.events.append(EventRecord("Warning", "PodGroupPending", warning))
        self._scale_down()
        if gang.gate_open(self.job.spec.scheduler_name, self.settings.gang_schedulers, pg):
            self._create_pods(claims)
        self._transitions()

    def _sync_pod_group(self) -> WireObject | None:
        """Create the PodGroup first; bring its spec in line on scale."""
        pg = self._pod_group_usable()
        if pg is None:
            if self.pod_group is not None and not self.pod_group_gone:
                return None  # the deleted one is still in the cache: wait for it to go
            # The deleted group's uid stays remembered: a stale cache copy of it must never
            # open the gate for the new pods.
            self.plan.create.insert(
                0, podgroup.build_pod_group(self.job, self.observed.priority_values)
            )
            return None
        updated = podgroup.updated_pod_group(pg, self.job, self.observed.priority_values)
        if updated is not None:
            self.plan.update.append(updated)
        return pg

    def _scale_down(self) -> None:
        replicas = {name: t.replica_count for name, t in self.tasks.items()}
        self._kill(scaling.extra_pods(self.pods, replicas))

    def _create_pods(self, claims: list[tuple[str, str]]) -> None:
        ctx = PodContext(
            job=self.job,
            version=self.version,
            retry_count=self.retry_count,
            pod_group=labels.pod_group_name(self.job.name, self.job.uid),
            claims=claims,
            plugins=self.plugins,
            attempt=attempts.current_index(self.attempts),
        )
        live_by_task = self._live_pods_by_task(p for p in self.pods if self._live(p))
        for task_name, task in self.tasks.items():
            if not dependson.can_create(self.job, task, live_by_task):
                continue
            done = self.recorded_succeeded.get(task_name, set())
            override = self.kueue.overrides.get(task_name)
            replicas = task.replica_count
            if override is not None and override.count is not None:
                replicas = min(replicas, override.count)
            for i in scaling.missing_indexes(
                self.job.name, task_name, replicas, self.all_pods_by_name.keys(), done
            ):
                pod = build_pod(ctx, task, i)
                self.created.append(
                    pod if override is None else kueue.apply_override(pod, override)
                )
        if self.created:
            self.plan.create.extend(self.created)
            self.plan.guard_uid = self.job.uid

    def _transitions(self) -> None:
        if self.transitioned:
            return  # one phase per status write
        all_finished, ghosts = self._slots()
        counts = self._tally().counts(extra_succeeded=ghosts)
        min_available = podgroup.job_min_available(self.job)
        if self.phase == JobPhase.PENDING:
            outcome = state.pending_outcome(counts, min_available)
            if outcome is not None:
                self._set_phase(outcome.to, outcome.reason, outcome.message)
            return
        succeeded = self._succeeded_now()
        met = successpolicy.evaluate(self.job.spec.success_policy, list(self.tasks), succeeded)
        if met is not None:
            self._set_phase(JobPhase.COMPLETING, "SuccessPolicy", met.message)
            self._drop_created()
            return
        outcome = state.running_outcome(
            counts,
            total_replicas=self.job.spec.total_replicas,
            min_available=min_available,
            min_success=self.job.spec.min_success,
            tasks=[
                state.TaskFinish(
                    name, t.replica_count, t.min_available, len(succeeded.get(name, set()))
                )
                for name, t in self.tasks.items()
            ],
            all_finished=all_finished,
        )
        if outcome is None:
            return
        self._set_phase(outcome.to, outcome.reason, outcome.message)
        if outcome.to in (JobPhase.COMPLETING, JobPhase.FAILED):
            self._drop_created()

    def _drop_created(self) -> None:
        """A job that stops running creates nothing more in this plan."""
        if self.created:
            names = {podview.name_of(p) for p in self.created}
            self.plan.create = [
                o
                for o in self.plan.create
                if not (o.get("kind") == "Pod" and podview.name_of(o) in names)
            ]
            self.created = []

    # ------------------------------------------------------------------ children

    def _sync_children(self, *, create: bool) -> None:
        """Plugin objects: created while the job can run, kept in line in every non-terminal
        phase (fix 13: the hosts ConfigMap follows replicas even while Pending)."""
        children = self.observed.children
        for plugin in self.plugins:
            self.controlled[f"plugin-{plugin.name}"] = plugin.name
            for desired in plugin.objects():
                key = (str(desired.obj["kind"]), str(desired.obj["metadata"]["name"]))
                existing = children.get(key)
                if existing is None:
                    if create:
                        self.plan.create.insert(self._child_slot(), desired.obj)
                    continue
                changed = {
                    k: desired.obj.get(k)
                    for k in desired.managed
                    if existing.get(k) != desired.obj.get(k)
                }
                if changed:
                    updated = copy.deepcopy(existing)
                    updated.update(copy.deepcopy(changed))
                    # Before the PodGroup's update, as Volcano's initOnJobUpdate: a conflict on
                    # the PodGroup (its status is written often) must not hold the hosts back.
                    updates = self.plan.update
                    slot = next(
                        (i for i, o in enumerate(updates) if o.get("kind") == "PodGroup"),
                        len(updates),
                    )
                    updates.insert(slot, updated)
            self.memory.pop(ssh_plugin.MEMORY_KEY, None) if plugin.name == "ssh" else None
            self.memory.update(plugin.remember())

    def _child_slot(self) -> int:
        """Plugin objects go after the PodGroup and PVCs, before pods."""
        for i, obj in enumerate(self.plan.create):
            if obj.get("kind") == "Pod":
                return i
        return len(self.plan.create)

    def _finish(self) -> None:
        """Terminal phases: unfinished pods, the PodGroup and plugin objects go; the status stays
        (counters keep tracking the pods that remain)."""
        self._kill_unfinished()
        self._delete_pod_group()
        owned_names = {self.job.name, f"{self.job.name}-svc", f"{self.job.name}-ssh"}
        for (kind, name), child in sorted(self.observed.children.items()):
            if (
                kind in PLUGIN_KINDS
                and name in owned_names
                and podview.controller_uid(child) == self.job.uid
            ):
                self.plan.delete.append(
                    ObjectRef(
                        str(child.get("apiVersion") or "v1"),
                        kind,
                        self.job.namespace,
                        name,
                        podview.uid_of(child) or None,
                    )
                )
        self.controlled = {k: v for k, v in self.controlled.items() if not k.startswith("plugin-")}
        self.memory.pop("sshKey", None)
        ttl = self.job.spec.ttl_seconds_after_finished
        expiry = ttl_mod.ttl_outcome(ttl, status_mod.parse_time(self.last_transition), self.now)
        if expiry is not None:
            if expiry.delete:
                self.plan.delete_job = True
                self.plan.events.append(
                    EventRecord(
                        "Normal",
                        "TTLExpired",
                        f"the job finished at {self.last_transition} and its "
                        f"ttlSecondsAfterFinished of {ttl}s passed; deleting it",
                    )
                )
            elif expiry.wait is not None:
                self.requeue.append(expiry.wait)

    # ------------------------------------------------------------------ status

    def _blocked(self) -> blocked.Blocked | None:
        if self.phase != JobPhase.PENDING:
            return None
        queue_name = self.job.spec.queue or labels.DEFAULT_QUEUE
        if self.observed.queue_looked_up:
            queue_obj = self.observed.queue
            facts = blocked.QueueFacts(
                queue_name,
                found=queue_obj is not None,
                state=((queue_obj or {}).get("status") or {}).get("state"),
            )
        else:
            facts = blocked.QueueFacts(queue_name)
        found = blocked.blocked_reason(
            missing_pvcs=self.missing_pvcs,
            queue=facts,
            pod_group=self._pod_group_usable(),
            pods=[p for p in self.pods if self._live(p)],
        )
        if found is not None and found.reason in blocked.NOT_ADMITTED:
            self.requeue.append(BLOCKED_RECHECK)  # a Queue change enqueues no job
        return found

    def _lifecycle_status(self, new_status: dict[str, Any]) -> None:
        """vcjob's own status fields: the run clock, restart counts by cause, the attempts, the
        typed conditions and `reason`. Volcano's fields are left as they are."""
        when = status_mod.rfc3339(self.now)
        self.clock = deadline.advance(
            self.clock,
            running=self.phase == JobPhase.RUNNING,
            suspended=suspension.clock_paused(self.job, self.phase),
            now=self.now,
        )
        if not self.attempts:
            self.attempts = attempts.start([], when)
        if self.phase in state.TERMINAL:
            self.attempts = attempts.end(
                self.attempts,
                self.last_transition or when,
                cause=None,
                reason=self.reason or self.phase.value,
                failed=attempts.failed_pods(self.pods),
            )
        facts = typedconditions.JobFacts(
            phase=self.phase,
            reason=self.reason,
            message=self.message,
            pod_group_phase=podgroup.phase_of(self._pod_group_usable()) or None,
            blocked=self._blocked(),
            generation=int(podview.metadata(self.raw_job).get("generation") or 0),
        )
        typed = typedconditions.merged(self.old_status.get("typedConditions") or [], facts, when)
        typed = suspension.suspended_conditions(
            typed,
            suspended=self.suspended and self.phase not in state.TERMINAL,
            message=self._suspended_message()
            if self.suspended
            else "spec.suspend is false: the job runs",
            now=when,
            generation=podview.metadata(self.raw_job).get("generation"),
        )
        fields: dict[str, Any] = {
            **self.clock.to_status(),
            "restartCounts": {
                "application": self.restart_counts.get("application", 0),
                "infrastructure": self.restart_counts.get("infrastructure", 0),
                "operator": self.restart_counts.get("operator", 0),
            },
            "attempts": self.attempts,
            "typedConditions": typed,
            "reason": typedconditions.status_reason(typed),
        }
        for key, value in fields.items():
            if value is None:
                new_status.pop(key, None)
            else:
                new_status[key] = value

    def _finalize(self) -> None:
        tally = self._tally()
        new_status = copy.deepcopy(self.old_status)
        new_state = dict(new_status.get("state") or {})
        new_state["phase"] = self.phase.value
        for key, value in (
            ("reason", self.reason),
            ("message", self.message),
            ("lastTransitionTime", self.last_transition),
        ):
            if value is not None:
                new_state[key] = value
        new_status["state"] = new_state
        new_status.update(
            {
                "minAvailable": podgroup.job_min_available(self.job),
                "pending": tally.pending,
                "running": tally.running,
                "succeeded": tally.succeeded,
                "failed": tally.failed,
                "terminating": tally.terminating,
                "unknown": tally.unknown,
                "version": self.version,
                "retryCount": self.retry_count,
                "taskStatusCount": tally.task_status_count(),
                "succeededIndexes": status_mod.render_succeeded_indexes(self._succeeded_now()),
                "controlledResources": dict(sorted(self.controlled.items())),
                "conditions": self.conditions,
            }
        )
        if self.running_duration is not None:
            new_status["runningDuration"] = self.running_duration
        self._lifecycle_status(new_status)
        if not status_mod.unchanged(self.old_status, new_status):
            self.plan.status = new_status

        self.memory[MEMORY_TIMERS] = self.timers
        if not self.timers:
            self.memory.pop(MEMORY_TIMERS, None)
        self.plan.memory = self.memory
        waits = list(self.requeue)
        next_fire = min(
            (
                t
                for t in (status_mod.parse_time(v.get("fireAt")) for v in self.timers.values())
                if t is not None
            ),
            default=None,
        )
        if next_fire is not None:
            waits.append(max(next_fire - self.now, timedelta(0)))
        if self.transitioned and self.phase not in state.TERMINAL:
            waits.append(FOLLOW_UP)
        if waits:
            self.plan.requeue_after = min(waits)
