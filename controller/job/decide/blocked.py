"""Why a Pending job does not run: the first blocking cause found, with a machine-readable
reason (`status.reason`, the `Blocked` condition, `vcjob job why`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.job.decide import nativegang, podview
from shared.wire import conditions_of, container_statuses, status_of, status_phase, waiting_state

MISSING_PVC: Final = "MissingPVC"
QUEUE_MISSING: Final = "QueueMissing"
QUEUE_CLOSED: Final = "QueueClosed"
UNSCHEDULABLE: Final = "Unschedulable"
IMAGE_PULL_BACK_OFF: Final = "ImagePullBackOff"
# Reasons that mean the scheduler did not admit the job's PodGroup.
NOT_ADMITTED: Final = frozenset({QUEUE_MISSING, QUEUE_CLOSED, UNSCHEDULABLE})
_IMAGE_WAITING: Final = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName"})


@dataclass(frozen=True)
class Blocked:
    reason: str
    message: str


@dataclass(frozen=True)
class QueueFacts:
    """The job's Queue as looked up: `found` None when it was not looked up."""

    name: str
    found: bool | None = None
    state: str | None = None


def queue_verdict_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    """Whether a change of a Queue can change its jobs' verdict: it appeared, went, or its state
    (Open, Closing, Closed) moved. Its counts, which change with every PodGroup, cannot."""
    if (old is None) != (new is None):
        return True
    return _queue_state(old) != _queue_state(new)


def _queue_state(queue: Mapping[str, Any] | None) -> str | None:
    state = status_of(queue).get("state")
    return str(state) if state is not None else None


def blocked_reason(
    *,
    missing_pvcs: Sequence[str],
    queue: QueueFacts,
    pod_group: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]],
    native_pod_groups: Iterable[Mapping[str, Any]] = (),
) -> Blocked | None:
    """The first cause, in the order a user has to fix them: volumes, queue, images, capacity."""
    if missing_pvcs:
        names = ", ".join(missing_pvcs)
        return Blocked(MISSING_PVC, f"PersistentVolumeClaim {names} not found")
    if queue.found is False:
        return Blocked(QUEUE_MISSING, f"queue {queue.name} does not exist")
    if queue.found and queue.state not in (None, "", "Open"):
        return Blocked(
            QUEUE_CLOSED, f"queue {queue.name} is {queue.state}: it admits no new PodGroups"
        )
    pods = list(pods)
    for pod in sorted(pods, key=podview.name_of):
        for status in container_statuses(pod):
            waiting = waiting_state(status)
            if waiting.get("reason") in _IMAGE_WAITING:
                detail = waiting.get("message") or f"cannot pull image {status.get('image')}"
                return Blocked(IMAGE_PULL_BACK_OFF, f"pod {podview.name_of(pod)}: {detail}")
    if status_phase(pod_group) in ("", "Pending"):
        for condition in conditions_of(pod_group):
            if condition.get("type") == UNSCHEDULABLE and condition.get("status") == "True":
                return Blocked(UNSCHEDULABLE, str(condition.get("message") or "not admitted"))
    # kube-scheduler writes its verdict on the PodGroups, a composite gang's on each task's.
    for native in sorted(native_pod_groups, key=podview.name_of):
        gang = nativegang.gang_state(native)
        if gang is not None and not gang.scheduled:
            return Blocked(UNSCHEDULABLE, f"kube-scheduler: {gang.message or gang.reason}")
    for pod in sorted(pods, key=podview.name_of):
        for condition in conditions_of(pod):
            if (
                condition.get("type") == "PodScheduled"
                and condition.get("status") == "False"
                and condition.get("reason") == UNSCHEDULABLE
            ):
                message = condition.get("message") or "no node fits"
                return Blocked(UNSCHEDULABLE, f"pod {podview.name_of(pod)}: {message}")
    return None
