"""Lifecycle events and policy matching.

Events are derived level-triggered from what is observed now (pods, pod edges, the PodGroup,
the spec), except PodEvicted (a deletion edge) and JobUpdated (a spec change remembered by
generation). Delayed actions (timers) are `controller.job.decide.timers`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from controller.job.decide import podview
from controller.job.decide.podview import JobPod
from shared.duration import parse_duration
from shared.models import Job, LifecyclePolicy, PolicyAction, PolicyEvent, TaskSpec

# Events `*` stands for. TaskCompleted and JobUpdated are not failures: a `* → RestartJob`
# policy must not restart a job because a task finished or the job was scaled.
_ANY_MATCHES = frozenset(
    {
        PolicyEvent.POD_FAILED,
        PolicyEvent.POD_EVICTED,
        PolicyEvent.POD_PENDING,
        PolicyEvent.UNKNOWN,
        PolicyEvent.TASK_FAILED,
    }
)
POD_EVENTS = frozenset({PolicyEvent.POD_FAILED, PolicyEvent.POD_EVICTED, PolicyEvent.POD_PENDING})
DEFAULT_TASK_MAX_RETRY = 3


@dataclass(frozen=True)
class JobEvent:
    event: PolicyEvent
    detail: str
    task: str | None = None
    pod: str | None = None
    pod_uid: str | None = None
    exit_code: int | None = None

    @property
    def timer_key(self) -> str:
        if self.event in POD_EVENTS:
            return f"{self.event}/pod/{self.pod}"
        if self.task is not None:
            return f"{self.event}/task/{self.task}"
        return str(self.event)


@dataclass(frozen=True)
class Decision:
    """An action to execute now, and why."""

    action: PolicyAction
    cause: str
    command: bool = False
    task: str | None = None
    pod: str | None = None
    event: PolicyEvent | None = None


def _events_of(policy: LifecyclePolicy) -> list[str]:
    return policy.event_list()


def policy_matches(policy: LifecyclePolicy, ev: JobEvent) -> bool:
    if ev.exit_code is not None and policy.exit_code is not None:
        return policy.exit_code == ev.exit_code
    events = _events_of(policy)
    hit = str(ev.event) in events or (PolicyEvent.ANY.value in events and ev.event in _ANY_MATCHES)
    if not hit:
        return False
    # PodPending only means something with a timeout ("still pending after …").
    return ev.event != PolicyEvent.POD_PENDING or bool(policy.timeout)


def match_policy(job: Job, ev: JobEvent) -> LifecyclePolicy | None:
    """The task's own policies first, then the job's; the first match wins."""
    task = job.task(ev.task) if ev.task else None
    for policy in list((task.policies or []) if task else []) + list(job.spec.policies or []):
        if policy.action and policy_matches(policy, ev):
            return policy
    return None


def timeout_of(policy: LifecyclePolicy) -> timedelta | None:
    if not policy.timeout:
        return None
    try:
        delay = parse_duration(policy.timeout)
    except ValueError:
        return None
    return delay if delay > timedelta(0) else None


def task_max_retry(task: TaskSpec) -> int:
    return task.max_retry or DEFAULT_TASK_MAX_RETRY


def pod_events(pods: Iterable[JobPod]) -> list[JobEvent]:
    """PodFailed (difference 9: exit code of the first container that terminated non-zero) and
    PodPending, for live pods of the current version the controller has not let go of."""
    out: list[JobEvent] = []
    for pod in pods:
        name, uid = pod.name, pod.uid or ""
        if pod.phase == podview.FAILED:
            code = podview.failed_exit_code(pod.wire)
            detail = f"pod {name} failed" + (f" with exit code {code}" if code else "")
            out.append(JobEvent(PolicyEvent.POD_FAILED, detail, pod.task, name, uid, code))
        elif pod.phase == podview.PENDING:
            out.append(
                JobEvent(PolicyEvent.POD_PENDING, f"pod {name} is pending", pod.task, name, uid)
            )
    return out


def evicted_event(pod: Mapping[str, Any]) -> JobEvent:
    name = podview.name_of(pod)
    return JobEvent(
        PolicyEvent.POD_EVICTED,
        f"pod {name} was deleted",
        podview.task_of(pod),
        name,
        podview.uid_of(pod),
    )


def completed_tasks(
    tasks: Sequence[TaskSpec], succeeded: Mapping[str, AbstractSet[int]]
) -> frozenset[str]:
    """Tasks whose every replica succeeded."""
    return frozenset(
        str(t.name)
        for t in tasks
        if t.replica_count > 0 and set(range(t.replica_count)) <= succeeded.get(str(t.name), set())
    )


def failed_tasks(tasks: Sequence[TaskSpec], live_pods: Iterable[JobPod]) -> frozenset[str]:
    """Tasks whose running/pending pods restarted their containers task.maxRetry times or more."""
    restarts: dict[str, int] = {}
    for pod in live_pods:
        if pod.task is not None and pod.phase in (podview.RUNNING, podview.PENDING):
            restarts[pod.task] = restarts.get(pod.task, 0) + pod.restarts
    return frozenset(
        str(task.name)
        for task in tasks
        if str(task.name) in restarts and restarts[str(task.name)] >= task_max_retry(task)
    )
