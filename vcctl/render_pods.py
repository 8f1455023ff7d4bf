"""`vcjob pod list` as pure functions: which pods it shows (`--queue` goes through each Job's
`spec.queue`) and vcctl's table of them, whose Status is kubectl's (`kubectl get pods`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from shared.labels import DEFAULT_QUEUE, JOB_NAME_KEY
from shared.rfc3339 import parse_time
from shared.wire import (
    WireObject,
    annotations_of,
    labels_of,
    metadata,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    terminated_state,
)
from vcctl.render import NO_RESOURCES, padded_table, since

COLUMN_SPACING: Final = 8
POD_COLUMNS: Final = ("Name", "Ready", "Status", "Restart", "Age")
# The queue of a pod that is not a Volcano Job's (a Deployment's, say) scheduled by Volcano.
QUEUE_NAME_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
# kubelet's reason for a pod of a node that stopped answering (k8s.io/kubernetes/pkg/util/node).
NODE_LOST: Final = "NodeLost"
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


# --- Which pods ---------------------------------------------------------------------------------


def job_queue(job: WireObject) -> str:
    return str(spec_of(job).get("queue") or DEFAULT_QUEUE)


def _key(obj: WireObject) -> tuple[str, str]:
    return namespace_of(obj), name_of(obj)


def _job_of(pod: WireObject) -> str:
    return str(labels_of(pod).get(JOB_NAME_KEY) or "")


def _annotated_queue(pod: WireObject) -> str:
    return str(annotations_of(pod).get(QUEUE_NAME_ANNOTATION) or "")


def queue_mismatch(jobs: Iterable[WireObject], job: str, queue: str) -> str | None:
    """With `--job` and `--queue`: why they do not go together (a Job of that name is in
    another queue), else None."""
    for candidate in jobs:
        if _key(candidate)[1] == job and job_queue(candidate) != queue:
            return (
                f"the input vcjob {job} does not match the queue {queue} "
                f"(it is in queue {job_queue(candidate)})"
            )
    return None


def pods_in_queue(
    pods: Sequence[WireObject], jobs: Iterable[WireObject], queue: str
) -> list[WireObject]:
    """The pods of the Jobs whose `spec.queue` is `queue`, then, as vcctl, the other pods that
    the `scheduling.volcano.sh/queue-name` annotation puts in it; each in the order given."""
    in_queue = {_key(j) for j in jobs if job_queue(j) == queue}
    of_jobs = [p for p in pods if _job_of(p) and (_key(p)[0], _job_of(p)) in in_queue]
    others = [p for p in pods if not _job_of(p) and _annotated_queue(p) == queue]
    return of_jobs + others


# --- The table ----------------------------------------------------------------------------------


def _later(current: str, candidate: Any) -> str:
    """The later of two stamps (an empty one is the earliest)."""
    new, old = parse_time(candidate), parse_time(current)
    if new is not None and (old is None or new > old):
        return str(candidate)
    return current


def _last_terminated(status: WireObject) -> Any:
    return terminated_state(status, last=True).get("finishedAt")


def _exit_reason(terminated: WireObject, prefix: str = "") -> str:
    if terminated.get("reason"):
        return prefix + str(terminated["reason"])
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode') or 0}"


def _condition(status: WireObject, kind: str) -> str | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status") or "")
    return None


def pod_cells(pod: WireObject, now: datetime) -> list[str]:
    """Name, Ready, Status, Restart, Age of a pod, reckoned as `kubectl get pods` does (init
    containers, sidecars, a waiting or terminated container's reason, Terminating)."""
    meta, spec, status = metadata(pod), spec_of(pod), status_of(pod)
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    sidecars = {name for name, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(sidecars)
    ready = restarts = sidecar_restarts = 0
    last_restart = last_sidecar_restart = ""

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for index, container in enumerate(init_statuses):
        restarts += int(container.get("restartCount") or 0)
        last_restart = _later(last_restart, _last_terminated(container))
        sidecar = container.get("name") in sidecars
        if sidecar:
            sidecar_restarts += int(container.get("restartCount") or 0)
            last_sidecar_restart = _later(last_sidecar_restart, _last_terminated(container))
        state = container.get("state") or {}
        terminated = state.get("terminated")
        waiting = state.get("waiting")
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and container.get("started"):
            ready += 1 if container.get("ready") else 0
            continue
        if terminated is not None:
            reason = _exit_reason(terminated, "Init:")
        elif waiting is not None and waiting.get("reason") not in (None, "", "PodInitializing"):
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition(status, "Initialized") == "True":
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += int(container.get("restartCount") or 0)
            last_restart = _later(last_restart, _last_terminated(container))
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated is not None:
                reason = _exit_reason(terminated)
            elif container.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if _condition(status, "Ready") == "True" else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == NODE_LOST:
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in TERMINAL_PHASES:
        reason = "Terminating"

    shown_restarts = str(restarts)
    if restarts and last_restart:
        shown_restarts = f"{restarts} ({since(last_restart, now)} ago)"
    return [
        str(meta.get("name") or ""),
        f"{ready}/{total}",
        reason,
        shown_restarts,
        since(meta.get("creationTimestamp"), now),
    ]


def pod_table(pods: Sequence[WireObject], now: datetime, all_namespaces: bool = False) -> str:
    """`vcctl pod list`: each column as wide as its longest cell plus eight; with
    `--all-namespaces`, a Namespace column first (vcctl has none, so pods of two namespaces
    could not be told apart)."""
    if not pods:
        return NO_RESOURCES
    header = list(POD_COLUMNS)
    rows = [pod_cells(p, now) for p in pods]
    if all_namespaces:
        header.insert(0, "Namespace")
        rows = [[_key(p)[0], *row] for p, row in zip(pods, rows, strict=True)]
    return padded_table(header, rows, COLUMN_SPACING, sized_by_header=False)
