"""The simulated kubelet's decisions for one bound pod, as pure functions of the pod and the time.

A bound pod starts ~0.5 s after it is seen, runs for its runtime (annotation `sim.vcjob.io/runtime`,
else the simulator's default), then exits with code 0, or with `sim.vcjob.io/exit-code`;
`sim.vcjob.io/fail-after` makes it exit non-zero after that time instead. The restart policy decides
what an exit means, as on a real node: Never ends the pod, OnFailure restarts failed containers,
Always (the Kubernetes default) restarts every exit. A pod being deleted has its containers killed
(exit code 137), then is removed after its grace period, capped at ~0.5 s.

A pod with `sim.vcjob.io/work` runs until its task's work is done instead (`work.py`).

A pod controlled by a ReplicaSet, StatefulSet or DaemonSet and carrying none of those annotations is
a long-running server (think nginx): it runs, Ready, until it is deleted.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from localcluster.simulator import podnet, work
from shared import quantity
from shared.duration import parse_duration
from shared.labels import SIM_EXIT_CODE_KEY, SIM_FAIL_AFTER_KEY, SIM_RUNTIME_KEY
from shared.wire import (
    annotations_of,
    container_statuses,
    deletion_timestamp,
    metadata,
    owner_references,
    spec_of,
    status_of,
)

START_DELAY = timedelta(seconds=0.5)
MAX_TERMINATION_GRACE = timedelta(seconds=0.5)
DEFAULT_GRACE_SECONDS = 30
KILLED_EXIT_CODE = 137


# A pod whose status report was refused is reported again after a delay, doubled at each refusal
# up to the cap, as a kubelet's status manager retries at its next sync rather than in a loop.
STATUS_RETRY_FIRST = 1.0
STATUS_RETRY_MAX = 30.0


def status_retry_delay(previous: float | None) -> float:
    """How long to wait before reporting a pod's status again after a refusal."""
    return STATUS_RETRY_FIRST if previous is None else min(previous * 2, STATUS_RETRY_MAX)


#: Kinds (of group apps) whose pods serve until deleted unless an annotation scripts them.
LONG_RUNNING_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "DaemonSet"})
SCRIPT_KEYS = (SIM_RUNTIME_KEY, SIM_FAIL_AFTER_KEY, SIM_EXIT_CODE_KEY, work.SIM_WORK_KEY)


@dataclass(frozen=True)
class Script:
    """How a pod's containers behave: they stop `lifetime` after each start with `exit_code`;
    a `lifetime` of None means they run until the pod is deleted."""

    lifetime: timedelta | None
    exit_code: int


def runs_until_deleted(pod: Mapping[str, Any]) -> bool:
    """A workload controller's pod without a script annotation: a server that never exits."""
    annotations = annotations_of(pod)
    if any(key in annotations for key in SCRIPT_KEYS):
        return False
    for ref in owner_references(pod):
        if ref.get("controller") is True:
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            return group == "apps" and ref.get("kind") in LONG_RUNNING_OWNERS
    return False


def script_for_pod(pod: Mapping[str, Any], default_runtime: timedelta) -> tuple[Script, list[str]]:
    """The pod's script: forever for a workload controller's unscripted pod, else
    `pod_script` of its annotations."""
    if runs_until_deleted(pod):
        return Script(None, 0), []
    annotations = annotations_of(pod)
    spec, problems = work.work_spec(annotations)
    if spec is not None:
        return Script(None, 0), problems  # runs until work.tick says its task's work is done
    script, more = pod_script(annotations, default_runtime)
    return script, problems + more


def pod_script(
    annotations: Mapping[str, str], default_runtime: timedelta
) -> tuple[Script, list[str]]:
    """The pod's script from its annotations, and a message for each ignored annotation."""
    problems: list[str] = []

    def duration(key: str) -> timedelta | None:
        raw = annotations.get(key)
        if raw is None:
            return None
        try:
            value = parse_duration(str(raw))
        except ValueError as err:
            problems.append(f"annotation {key}: {err}")
            return None
        if value < timedelta(0):
            problems.append(f'annotation {key}: "{raw}" must not be negative')
            return None
        return value

    exit_code = 0
    raw_code = annotations.get(SIM_EXIT_CODE_KEY)
    if raw_code is not None:
        try:
            exit_code = int(str(raw_code))
        except ValueError:
            problems.append(f'annotation {SIM_EXIT_CODE_KEY}: "{raw_code}" is not an integer')
        else:
            if not 0 <= exit_code <= 255:
                problems.append(f"annotation {SIM_EXIT_CODE_KEY}: {exit_code} is not in 0..255")
                exit_code = 1
    runtime = duration(SIM_RUNTIME_KEY)
    fail_after = duration(SIM_FAIL_AFTER_KEY)
    if fail_after is not None:
        return Script(fail_after, exit_code or 1), problems
    return Script(default_runtime if runtime is None else runtime, exit_code), problems


class Action(enum.Enum):
    START = "start"
    FINISH = "finish"
    RESTART = "restart"
    KILL = "kill"
    DELETE = "delete"


@dataclass(frozen=True)
class PodTimes:
    """What the kubelet remembers about a pod, with sub-second precision."""

    bound_seen: datetime
    started: datetime | None = None
    terminating_seen: datetime | None = None


@dataclass(frozen=True)
class Step:
    action: Action
    status: dict[str, Any] | None = None


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def pod_ip(uid: str) -> str:
    """A stable made-up address in 10.244.128.0/17, where no pod that really runs is."""
    return podnet.simulated_pod_ip(uid)


def _digest(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def image_repository(image: str) -> str:
    """`busybox:1.36` → `docker.io/library/busybox`, as a container runtime reports it."""
    name = image.split("@", 1)[0]
    last_slash = name.rfind("/")
    if ":" in name[last_slash + 1 :]:
        name = name[: name.rindex(":")]
    first, _, rest = name.partition("/")
    if not rest:
        return f"docker.io/library/{name}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{name}"
    return name


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(spec_of(pod).get("containers") or [])


def _condition(kind: str, status: bool, at: str, reason: str = "") -> dict[str, Any]:
    condition: dict[str, Any] = {
        "type": kind,
        "status": "True" if status else "False",
        "lastTransitionTime": at,
    }
    if reason:
        condition["reason"] = reason
    return condition


#: The resources that decide a pod's QoS class (Kubernetes' supportedQoSComputeResources):
#: extended resources such as `nvidia.com/gpu` do not count.
QOS_RESOURCES = ("cpu", "memory")


def qos_class(pod: Mapping[str, Any]) -> str:
    """The pod's QoS class as a kubelet reports it (Kubernetes' `GetPodQOS`): the class
    kube-apiserver set in the pod's status when it admitted the pod, else computed as it is
    there. A status report with another class is refused (`status.qosClass` is immutable)."""
    stored = status_of(pod).get("qosClass")
    if stored:
        return str(stored)
    return compute_qos_class(pod)


def compute_qos_class(pod: Mapping[str, Any]) -> str:
    """Kubernetes' `ComputePodQOS`: only cpu and memory amounts above zero count; pod-level
    resources, when the spec has them, stand for the containers'."""
    spec = pod.get("spec") or {}
    pod_level = spec.get("resources") or {}
    if pod_level.get("requests") or pod_level.get("limits"):
        sources: list[Mapping[str, Any]] = [pod_level]
    else:
        sources = [
            container.get("resources") or {}
            for container in (*_containers(pod), *(spec.get("initContainers") or []))
        ]
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for source in sources:
        source_limits = _qos_amounts(source.get("limits"))
        # As kube-apiserver's defaulting: a resource with a limit and no request requests it.
        source_requests = {**source_limits, **_qos_amounts(source.get("requests"))}
        for name, amount in source_requests.items():
            requests[name] = requests.get(name, Decimal(0)) + amount
        for name, amount in source_limits.items():
            limits[name] = limits.get(name, Decimal(0)) + amount
        if source is not pod_level or pod_level.get("limits"):
            guaranteed = guaranteed and set(QOS_RESOURCES) <= set(source_limits)
    if not requests and not limits:
        return "BestEffort"
    guaranteed = guaranteed and all(limits.get(n) == amount for n, amount in requests.items())
    return "Guaranteed" if guaranteed and len(requests) == len(limits) else "Burstable"


def _qos_amounts(raw: Any) -> dict[str, Decimal]:
    """The cpu and memory amounts above zero of a resource list."""
    amounts: dict[str, Decimal] = {}
    for name in QOS_RESOURCES:
        amount = quantity.try_parse((raw or {}).get(name)) if isinstance(raw, Mapping) else None
        if amount is not None and amount > 0:
            amounts[name] = amount
    return amounts


def _uid(pod: Mapping[str, Any]) -> str:
    meta = metadata(pod)
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")


def _running_state(
    pod: Mapping[str, Any], container: Mapping[str, Any], at: str, restarts: int
) -> dict[str, Any]:
    name = str(container.get("name", ""))
    image = str(container.get("image", ""))
    return {
        "name": name,
        "state": {"running": {"startedAt": at}},
        "lastState": {},
        "ready": True,
        "started": True,
        "restartCount": restarts,
        "image": image,
        "imageID": f"{image_repository(image)}@sha256:{_digest(image)}",
        "containerID": f"containerd://{_digest(_uid(pod), name, str(restarts))}",
    }


def _terminated(
    previous: Mapping[str, Any], exit_code: int, reason: str, at: str
) -> dict[str, Any]:
    state = previous.get("state") or {}
    started = (state.get("running") or {}).get("startedAt") or at
    return {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": at,
        "containerID": previous.get("containerID", ""),
    }


def _exit_reason(exit_code: int) -> str:
    return "Completed" if exit_code == 0 else "Error"


def start_status(
    pod: Mapping[str, Any], host_ip: str, now: datetime, restarts: int = 0
) -> dict[str, Any]:
    at = timestamp(now)
    address = pod_ip(_uid(pod))
    status: dict[str, Any] = {
        "phase": "Running",
        "conditions": [
            _condition("PodReadyToStartContainers", True, at),
            _condition("Initialized", True, at),
            _condition("Ready", True, at),
            _condition("ContainersReady", True, at),
            _condition("PodScheduled", True, at),
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": address,
        "podIPs": [{"ip": address}],
        "startTime": at,
        "qosClass": qos_class(pod),
        "containerStatuses": [_running_state(pod, c, at, restarts) for c in _containers(pod)],
    }
    init_containers = spec_of(pod).get("initContainers") or []
    if init_containers:
        status["initContainerStatuses"] = [
            {
                **_running_state(pod, c, at, 0),
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": at,
                        "finishedAt": at,
                    }
                },
                "ready": True,
                "started": False,
            }
            for c in init_containers
        ]
    return status


def _statuses_by_name(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    statuses = container_statuses(pod)
    return {str(s.get("name")): s for s in statuses}


def _not_ready(conditions: Sequence[Mapping[str, Any]], at: str, reason: str) -> list[Any]:
    updated: list[Any] = []
    for condition in conditions:
        if condition.get("type") in ("Ready", "ContainersReady"):
            updated.append(_condition(str(condition["type"]), False, at, reason))
        else:
            updated.append(dict(condition))
    return updated


def finish_status(pod: Mapping[str, Any], exit_code: int, now: datetime) -> dict[str, Any]:
    at = timestamp(now)
    status = dict(status_of(pod))
    previous = _statuses_by_name(pod)
    containers = []
    for container in _containers(pod):
        old = previous.get(str(container.get("name")), {})
        containers.append(
            {
                **old,
                "state": {"terminated": _terminated(old, exit_code, _exit_reason(exit_code), at)},
                "ready": False,
                "started": False,
            }
        )
    status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
    status["containerStatuses"] = containers
    status["conditions"] = _not_ready(status.get("conditions") or [], at, "PodCompleted")
    return status


def restart_status(pod: Mapping[str, Any], exit_code: int, now: datetime) -> dict[str, Any]:
    at = timestamp(now)
    status = dict(status_of(pod))
    previous = _statuses_by_name(pod)
    containers = []
    for container in _containers(pod):
        old = previous.get(str(container.get("name")), {})
        restarts = int(old.get("restartCount") or 0) + 1
        fresh = _running_state(pod, container, at, restarts)
        fresh["lastState"] = {
            "terminated": _terminated(old, exit_code, _exit_reason(exit_code), at)
        }
        containers.append(fresh)
    status["containerStatuses"] = containers
    return status


def kill_status(pod: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    at = timestamp(now)
    status = dict(status_of(pod))
    previous = _statuses_by_name(pod)
    containers = []
    for container in _containers(pod):
        old = previous.get(str(container.get("name")), {})
        if "terminated" in (old.get("state") or {}):
            containers.append(dict(old))
            continue
        killed = _terminated(old, KILLED_EXIT_CODE, "Error", at)
        containers.append(
            {**old, "state": {"terminated": killed}, "ready": False, "started": False}
        )
    status["containerStatuses"] = containers
    status["conditions"] = _not_ready(status.get("conditions") or [], at, "PodCompleted")
    return status


def _all_terminated(pod: Mapping[str, Any]) -> bool:
    previous = _statuses_by_name(pod)
    return all(
        "terminated" in (previous.get(str(c.get("name")), {}).get("state") or {})
        for c in _containers(pod)
    )


def _grace(pod: Mapping[str, Any]) -> timedelta:
    seconds = metadata(pod).get("deletionGracePeriodSeconds")
    if seconds is None:
        seconds = spec_of(pod).get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    return timedelta(seconds=max(int(seconds or 0), 0))


def next_step(
    pod: Mapping[str, Any],
    times: PodTimes,
    script: Script,
    host_ip: str,
    now: datetime,
) -> Step | None:
    """What the kubelet does to `pod` now, if anything."""
    phase = status_of(pod).get("phase") or "Pending"
    started = phase == "Running" or bool(status_of(pod).get("startTime"))

    if deletion_timestamp(pod):
        if started and phase not in ("Succeeded", "Failed") and not _all_terminated(pod):
            return Step(Action.KILL, kill_status(pod, now))
        since = times.terminating_seen or now
        if now - since >= min(_grace(pod), MAX_TERMINATION_GRACE):
            return Step(Action.DELETE)
        return None

    if phase in ("Succeeded", "Failed"):
        return None
    if not started:
        if now - times.bound_seen >= START_DELAY:
            return Step(Action.START, start_status(pod, host_ip, now))
        return None
    if script.lifetime is None or times.started is None or now - times.started < script.lifetime:
        return None
    policy = spec_of(pod).get("restartPolicy") or "Always"
    if policy == "Always" or (policy == "OnFailure" and script.exit_code != 0):
        return Step(Action.RESTART, restart_status(pod, script.exit_code, now))
    return Step(Action.FINISH, finish_status(pod, script.exit_code, now))


def container_started_at(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod's containers last started, as the pod's status records it (second precision)."""
    for status in container_statuses(pod):
        running = (status.get("state") or {}).get("running") or {}
        moment = parse_timestamp(running.get("startedAt"))
        if moment is not None:
            return moment
    return parse_timestamp(status_of(pod).get("startTime"))
