"""Work-based simulated training: a task's pods succeed when its work is done, not at a set time.

A pod carrying `sim.vcjob.io/work` belongs to a training task whose progress is shared by all its
running replicas (the pods with the same namespace, `volcano.sh/job-name` and
`volcano.sh/task-spec` labels):

- `sim.vcjob.io/work`: the task's total work in replica-seconds (a number, e.g. `600`): one
  replica alone needs 600 s, with perfect scaling 4 replicas need 150 s;
- `sim.vcjob.io/speedup-alpha`: with n replicas running the task progresses n^alpha
  replica-seconds per second (default 0.9: 8 replicas go 6.5 times as fast as one), 0 < alpha ≤ 1;
- `sim.vcjob.io/resize-pause`: after every change of the running count, once the task has started,
  no progress for this long (default 3s): the rendezvous restart of PyTorch elastic, where every
  worker stops, agrees on the new world size and reloads its checkpoint.

When the work is done every started pod of the task exits 0; a pod of a finished task that starts
later exits at once. Pods without the annotation keep the fixed runtime of `kubelet.pod_script`.
Everything here is pure: the simulator keeps the `Progress` map between kubelet ticks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final, NewType

from shared.duration import parse_duration
from shared.labels import JOB_NAME_KEY, TASK_SPEC_KEY
from shared.wire import deletion_timestamp

SIM_WORK_KEY: Final = "sim.vcjob.io/work"
SIM_SPEEDUP_ALPHA_KEY: Final = "sim.vcjob.io/speedup-alpha"
SIM_RESIZE_PAUSE_KEY: Final = "sim.vcjob.io/resize-pause"
DEFAULT_ALPHA: Final = 0.9
DEFAULT_RESIZE_PAUSE: Final = timedelta(seconds=3)

#: namespace/job/task, plus the Job's UID so a re-created job starts from zero.
TaskKey = NewType("TaskKey", str)


@dataclass(frozen=True)
class WorkSpec:
    work: float  # replica-seconds
    alpha: float = DEFAULT_ALPHA
    resize_pause: timedelta = DEFAULT_RESIZE_PAUSE


@dataclass(frozen=True)
class Progress:
    """A task's training state as of `at`: `replicas` were running since the last change."""

    spec: WorkSpec
    done: float = 0.0
    replicas: int = 0
    at: datetime | None = None
    paused_until: datetime | None = None
    resizes: int = 0

    @property
    def finished(self) -> bool:
        return self.done >= self.spec.work


def work_spec(annotations: Mapping[str, str]) -> tuple[WorkSpec | None, list[str]]:
    """The task's work model from a pod's annotations (None without `sim.vcjob.io/work`), and a
    message for each annotation ignored; a bad `work` value leaves the pod on its fixed runtime."""
    raw_work = annotations.get(SIM_WORK_KEY)
    if raw_work is None:
        return None, []
    problems: list[str] = []
    try:
        work = float(str(raw_work))
    except ValueError:
        return None, [f'annotation {SIM_WORK_KEY}: "{raw_work}" is not a number of replica-seconds']
    if not work > 0:
        return None, [f"annotation {SIM_WORK_KEY}: {raw_work} must be positive"]
    alpha = DEFAULT_ALPHA
    raw_alpha = annotations.get(SIM_SPEEDUP_ALPHA_KEY)
    if raw_alpha is not None:
        try:
            alpha = float(str(raw_alpha))
        except ValueError:
            problems.append(f'annotation {SIM_SPEEDUP_ALPHA_KEY}: "{raw_alpha}" is not a number')
        else:
            if not 0 < alpha <= 1:
                problems.append(f"annotation {SIM_SPEEDUP_ALPHA_KEY}: {raw_alpha} is not in (0, 1]")
                alpha = DEFAULT_ALPHA
    pause = DEFAULT_RESIZE_PAUSE
    raw_pause = annotations.get(SIM_RESIZE_PAUSE_KEY)
    if raw_pause is not None:
        try:
            pause = parse_duration(str(raw_pause))
        except ValueError as err:
            problems.append(f"annotation {SIM_RESIZE_PAUSE_KEY}: {err}")
        else:
            if pause < timedelta(0):
                problems.append(f'annotation {SIM_RESIZE_PAUSE_KEY}: "{raw_pause}" is negative')
                pause = DEFAULT_RESIZE_PAUSE
    return WorkSpec(work, alpha, pause), problems


def speedup(replicas: int, alpha: float) -> float:
    """Replica-seconds of work done per second by `replicas` running together."""
    return float(replicas) ** alpha if replicas > 0 else 0.0


def advance(progress: Progress, running: int, now: datetime) -> Progress:
    """The task's progress at `now`, with `running` replicas from now on.

    Work accrues at the speed-up of the replicas that ran since the last call, outside a pause. A
    change of the running count once the task has run starts a new pause (a pause in progress
    starts over), and counts as a resize."""
    if progress.at is None:
        return replace(progress, replicas=running, at=now)
    since = progress.at
    if progress.paused_until is not None and progress.paused_until > since:
        since = progress.paused_until
    elapsed = max(0.0, (now - since).total_seconds())
    rate = speedup(progress.replicas, progress.spec.alpha)
    done = min(progress.spec.work, progress.done + elapsed * rate)
    paused_until, resizes = progress.paused_until, progress.resizes
    has_run = done > 0 or progress.replicas > 0
    if running != progress.replicas and running > 0 and has_run:
        paused_until, resizes = now + progress.spec.resize_pause, resizes + 1
    return replace(
        progress, done=done, replicas=running, at=now, paused_until=paused_until, resizes=resizes
    )


def task_key(pod: Mapping[str, Any]) -> TaskKey | None:
    """The training task a pod belongs to, from the labels every Volcano Job's pod carries."""
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    job, task = labels.get(JOB_NAME_KEY), labels.get(TASK_SPEC_KEY)
    if not job or not task:
        return None
    owner = ""
    for ref in metadata.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            owner = str(ref.get("uid", ""))
    return TaskKey(f"{metadata.get('namespace')}/{job}/{task}/{owner}")


def _is_running(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and not deletion_timestamp(pod)


def tick(
    tasks: Mapping[TaskKey, Progress], pods: Iterable[Mapping[str, Any]], now: datetime
) -> tuple[dict[TaskKey, Progress], frozenset[str]]:
    """Every work-based task's progress at `now` from the pods seen, and the UIDs of the running
    pods to end now because their task's work is done. Tasks without pods are forgotten."""
    running: dict[TaskKey, list[str]] = {}
    specs: dict[TaskKey, WorkSpec] = {}
    for pod in pods:
        metadata = pod.get("metadata") or {}
        spec, _ = work_spec(metadata.get("annotations") or {})
        key = task_key(pod)
        if spec is None or key is None:
            continue
        specs.setdefault(key, spec)
        uids = running.setdefault(key, [])
        if _is_running(pod):
            uids.append(str(metadata.get("uid", "")))
    updated: dict[TaskKey, Progress] = {}
    finishing: set[str] = set()
    for key, uids in running.items():
        previous = tasks.get(key) or Progress(specs[key])
        progress = previous if previous.finished else advance(previous, len(uids), now)
        updated[key] = progress
        if progress.finished:
            finishing.update(uids)
    return updated, frozenset(finishing)
