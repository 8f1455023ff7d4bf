"""The elastic autoscaler's decisions: jobs, nodes and pods in, new task replicas out.

This is the fulfillment-score algorithm of the Elastic Deep Learning design ("Scaling Algorithm")
applied to Volcano Jobs (docs/elastic.md):

- capacity is counted per class: GPU tasks (their instance requests the GPU resource) compete for
  Σ allocatable GPUs minus GPU requests; CPU tasks for Σ allocatable cpu and memory minus the
  **limits** of every pod (the design's rule: limits, not requests);
- a task's fulfillment score is `(replicas - minReplicas) / (maxReplicas - minReplicas)`;
- a Pending job (elastic or not) below its minimum, for which the cluster is short, takes one
  instance at a time from the most fulfilled elastic task of its class that is above its minimum
  (GPU: only when that can free enough for the job, otherwise it waits; CPU: whatever can be freed,
  the job is scheduled optimistically);
- idle capacity then goes one instance at a time to the least fulfilled task of a Running job whose
  instance fits; with `min_growth` a task grows only when the round can add that share of its
  replicas (or take it to its maximum), since every resize costs a restart of its workers;
- with `resize_cooldown` a task resized less than that long ago (the time the loop writes in the
  job's RESIZED_AT_KEY annotation with every change) is not grown, and gives instances up only
  when no other donor can.

The function is pure and deterministic; it reads the frozen views of `views` (amounts from
`resources`); the loop in `controller.elastic.shell` does the I/O, woken early by `wake`'s rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any, Final

from controller.elastic.decide.resources import (
    CPU,
    MEMORY,
    Resources,
    describe,
    shortfall,
    sum_amounts,
)
from controller.elastic.decide.views import (
    ElasticJobView,
    NodeView,
    PodView,
    TaskView,
)
from shared.models import JobPhase

DEFAULT_GPU_RESOURCE: Final = "nvidia.com/gpu"


DEFAULT_MAX_STEP: Final = 1


DEFAULT_MIN_GROWTH: Final = 0.0


DEFAULT_RESIZE_COOLDOWN: Final = timedelta(0)


# Jobs whose missing pods the controller will (re)create: their spec replicas are what they hold.
PLANNED_PHASES: Final = frozenset({"", JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING})


SCALE_UP_PHASES: Final = frozenset({JobPhase.RUNNING})


DONOR_PHASES: Final = frozenset({JobPhase.PENDING, JobPhase.RUNNING})


BLOCKED_PHASES: Final = frozenset({JobPhase.PENDING})


STARTED_POD_PHASES: Final = frozenset({"Running", "Succeeded"})


@dataclass(frozen=True)
class ElasticSettings:
    gpu_resource: str = DEFAULT_GPU_RESOURCE
    max_step: int = DEFAULT_MAX_STEP  # instances taken from one task per round when scaling down
    # Resize cost awareness: a task grows only by at least this share of its replicas (or to its
    # maximum). Elastic trainers restart on every resize (a rendezvous), so growing by one worker
    # at a time can cost more than the worker brings. 0: every idle instance is handed out.
    min_growth: float = DEFAULT_MIN_GROWTH
    # Anti-churn: a task resized less than this long ago is not grown again, and is a donor only
    # when no other task can give. 0: off.
    resize_cooldown: timedelta = DEFAULT_RESIZE_COOLDOWN

    def __post_init__(self) -> None:
        if self.max_step < 1:
            raise ValueError(f"max_step must be at least 1, got {self.max_step}")
        if self.min_growth < 0 or math.isnan(self.min_growth):
            raise ValueError(f"min_growth must not be negative, got {self.min_growth}")
        if self.resize_cooldown < timedelta(0):
            raise ValueError(f"resize_cooldown must not be negative, got {self.resize_cooldown}")
        if not self.gpu_resource:
            raise ValueError("gpu_resource must not be empty")


@dataclass(frozen=True)
class ScaleDecision:
    namespace: str
    job: str
    task: str
    from_replicas: int
    to_replicas: int
    reason: str

    @property
    def scales_up(self) -> bool:
        return self.to_replicas > self.from_replicas


def cooling_down(resized_at: datetime | None, now: datetime, cooldown: timedelta) -> bool:
    """Resized less than `cooldown` before `now` (a time in the future counts as just now)."""
    return resized_at is not None and now - resized_at < cooldown


UnitKey = tuple[str, str, str]  # namespace, job, task


@dataclass(frozen=True)
class _Classes:
    """Which capacity dimensions a class of jobs competes for."""

    gpu: str

    def dims(self, is_gpu: bool) -> tuple[str, ...]:
        return (self.gpu,) if is_gpu else (CPU, MEMORY)

    def load(self, requests: Resources, limits: Resources) -> dict[str, Decimal]:
        """What one pod takes from the capacity: GPU requests, cpu and memory limits."""
        return {
            self.gpu: requests.get(self.gpu, Decimal(0)),
            CPU: limits.get(CPU, Decimal(0)),
            MEMORY: limits.get(MEMORY, Decimal(0)),
        }


@dataclass
class _Unit:
    """An elastic task being planned; `replicas` moves during the round."""

    job: ElasticJobView
    task: TaskView
    load: dict[str, Decimal]  # per instance, on the dimensions of its class only
    gpu: Decimal  # GPUs per instance (0 for a CPU task)
    replicas: int
    cooling: bool = False  # resized within the cooldown
    steps_down: int = 0
    reason: str = ""

    @property
    def key(self) -> UnitKey:
        return (self.job.namespace, self.job.name, self.task.name)

    @property
    def low(self) -> int:
        return self.task.min_replicas or 0

    @property
    def high(self) -> int:
        return self.task.max_replicas or 0

    def score(self) -> Fraction:
        return fulfillment(self.replicas, self.low, self.high)

    def tiebreak(self) -> tuple[Decimal, Decimal, Decimal]:
        # Larger instances first: GPUs per instance, then cpu request, then memory request.
        requests = self.task.requests
        return (-self.gpu, -requests.get(CPU, Decimal(0)), -requests.get(MEMORY, Decimal(0)))

    @property
    def is_gpu(self) -> bool:
        return self.gpu > 0


def fulfillment(replicas: int, low: int, high: int) -> Fraction:
    """`(current - min) / (max - min)`: 0 at the minimum, 1 at the maximum."""
    if high <= low:
        return Fraction(1)
    return Fraction(replicas - low, high - low)


def fulfillment_score(task: TaskView) -> float:
    return float(fulfillment(task.replicas, task.min_replicas or 0, task.max_replicas or 0))


def _least_fulfilled_first(unit: _Unit) -> tuple[Any, ...]:
    return (unit.score(), *unit.tiebreak(), unit.key)


def _most_fulfilled_first(unit: _Unit) -> tuple[Any, ...]:
    return (-unit.score(), *unit.tiebreak(), unit.key)


def _pods_by_task(pods: Sequence[PodView]) -> dict[UnitKey, list[PodView]]:
    grouped: dict[UnitKey, list[PodView]] = {}
    for pod in pods:
        if pod.job and pod.task:
            grouped.setdefault((pod.namespace, pod.job, pod.task), []).append(pod)
    return grouped


def _instance_loads(
    job: ElasticJobView,
    task: TaskView,
    pods: Sequence[PodView],
    classes: _Classes,
) -> list[dict[str, Decimal]]:
    """What each instance of a task holds, index by index.

    Instances not yet created count with the template's amounts: a plan that adds replicas must
    see them as taken in the next round, before the controller has created their pods, or it
    would hand the same capacity out twice (and later take it back: flapping). A pod beyond the
    spec's replicas or on its way out counts for nothing, for the same reason in reverse: the spec
    is the state the plan produced. A finished pod holds nothing and is not recreated.
    """
    template = classes.load(task.requests, task.limits)
    by_index: dict[int, PodView] = {}
    loads: list[dict[str, Decimal]] = []
    for task_pod in pods:
        if task_pod.terminating:
            continue
        if task_pod.index is None:
            if task_pod.active:
                loads.append(classes.load(task_pod.requests, task_pod.limits))
            continue
        by_index[task_pod.index] = task_pod
    if job.phase not in PLANNED_PHASES:
        loads.extend(classes.load(p.requests, p.limits) for p in by_index.values() if p.active)
        return loads
    for index in range(task.replicas):
        pod = by_index.get(index)
        if pod is None:
            loads.append(dict(template))
        elif pod.active:
            loads.append(classes.load(pod.requests, pod.limits))
        else:
            loads.append({})
    return loads


def _job_is_gpu(job: ElasticJobView, gpu: str) -> bool:
    return any(task.requests.get(gpu, Decimal(0)) > 0 for task in job.tasks)


def _is_blocked(job: ElasticJobView, pods: Mapping[UnitKey, list[PodView]]) -> bool:
    """Pending with fewer started pods than its minimum."""
    if job.phase not in BLOCKED_PHASES:
        return False
    started = sum(
        1
        for task in job.tasks
        for pod in pods.get((job.namespace, job.name, task.name), [])
        if pod.phase in STARTED_POD_PHASES and not pod.terminating
    )
    return started < job.minimum


def has_elastic_work(views: Sequence[ElasticJobView]) -> bool:
    """Whether a round has anything to plan: an elastic task in a job that is still planned
    (a finished job's elastic task neither grows nor gives). Without one, the loop reads no
    nodes or pods."""
    return any(
        task.is_elastic for view in views if view.phase in PLANNED_PHASES for task in view.tasks
    )


def plan_elastic(
    jobs: Sequence[ElasticJobView],
    nodes: Sequence[NodeView],
    pods: Sequence[PodView],
    settings: ElasticSettings,
    now: datetime | None = None,
) -> list[ScaleDecision]:
    """New replicas for elastic tasks, one decision per task that changes, in a stable order.

    `now` (aware) is needed only with a resize cooldown: without it no task counts as cooling."""
    classes = _Classes(settings.gpu_resource)
    zero = {settings.gpu_resource: Decimal(0), CPU: Decimal(0), MEMORY: Decimal(0)}
    capacity = sum_amounts(
        [zero, *(classes.load(n.allocatable, n.allocatable) for n in nodes if n.schedulable)]
    )
    pods_by_task = _pods_by_task(pods)
    known_tasks = {(j.namespace, j.name, t.name) for j in jobs for t in j.tasks}

    # Everything held now or planned by a spec, per job; the blocked jobs' share kept apart.
    held = [
        classes.load(p.requests, p.limits)
        for p in pods
        if p.active and (p.namespace, p.job, p.task) not in known_tasks
    ]
    blocked = sorted(
        (j for j in jobs if _is_blocked(j, pods_by_task)),
        key=lambda j: (j.created, j.namespace, j.name),
    )
    blocked_keys = {(j.namespace, j.name) for j in blocked}
    minimum_part: dict[tuple[str, str], dict[str, Decimal]] = {}
    extra_part: dict[tuple[str, str], dict[str, Decimal]] = {}
    unplaced_part: dict[tuple[str, str], dict[str, Decimal]] = {}
    for job in jobs:
        for task in job.tasks:
            task_pods = pods_by_task.get((job.namespace, job.name, task.name), [])
            loads = _instance_loads(job, task, task_pods, classes)
            held.extend(loads)
            if (job.namespace, job.name) in blocked_keys:
                key = (job.namespace, job.name)
                minimum_part[key] = sum_amounts([minimum_part.get(key, {}), *loads[: task.minimum]])
                extra_part[key] = sum_amounts([extra_part.get(key, {}), *loads[task.minimum :]])
                running = [
                    classes.load(p.requests, p.limits)
                    for p in task_pods
                    if p.phase == "Running" and not p.terminating
                ]
                unplaced = sum_amounts([*loads, *({k: -v for k, v in r.items()} for r in running)])
                unplaced_part[key] = sum_amounts([unplaced_part.get(key, {}), unplaced])
    free = sum_amounts([zero, capacity, *({k: -v for k, v in load.items()} for load in held)])

    units = []
    for job in jobs:
        for task in job.tasks:
            if not task.is_elastic:
                continue
            gpu = task.requests.get(settings.gpu_resource, Decimal(0))
            load = classes.load(task.requests, task.limits)
            units.append(
                _Unit(
                    job=job,
                    task=task,
                    load={d: load[d] for d in classes.dims(gpu > 0)},
                    gpu=gpu,
                    replicas=task.replicas,
                    cooling=now is not None
                    and cooling_down(task.resized_at, now, settings.resize_cooldown),
                )
            )

    _make_room(blocked, units, free, minimum_part, extra_part, unplaced_part, classes, settings)
    _fill_idle(units, free, classes, settings.min_growth)

    return [
        ScaleDecision(
            namespace=unit.job.namespace,
            job=unit.job.name,
            task=unit.task.name,
            from_replicas=unit.task.replicas,
            to_replicas=unit.replicas,
            reason=f"Scaled task {unit.task.name} {unit.task.replicas}→{unit.replicas}: "
            f"{unit.reason}",
        )
        for unit in sorted(units, key=lambda u: u.key)
        if unit.replicas != unit.task.replicas
    ]


def _make_room(
    blocked: Sequence[ElasticJobView],
    units: Sequence[_Unit],
    free: dict[str, Decimal],
    minimum_part: Mapping[tuple[str, str], Mapping[str, Decimal]],
    extra_part: Mapping[tuple[str, str], Mapping[str, Decimal]],
    unplaced_part: Mapping[tuple[str, str], Mapping[str, Decimal]],
    classes: _Classes,
    settings: ElasticSettings,
) -> None:
    """Shrink the most fulfilled elastic tasks until each blocked job's minimum fits."""
    all_extras = sum_amounts(extra_part.values())
    # A blocked job gives nothing: its replicas beyond the minimum are already counted as room
    # that may wait (`all_extras`), and a job that waits has its whole share back in `free`;
    # shrinking it would count the same capacity twice.
    blocked_keys = {(j.namespace, j.name) for j in blocked}
    for position, job in enumerate(blocked):
        key = (job.namespace, job.name)
        is_gpu = _job_is_gpu(job, settings.gpu_resource)
        needed = {
            d
            for d in classes.dims(is_gpu)
            if any(classes.load(t.requests, t.limits)[d] > 0 for t in job.tasks)
        }
        # The job's minimum must fit; its further replicas and the minimums of jobs that came
        # later may wait.
        later = sum_amounts(
            minimum_part.get((j.namespace, j.name), {}) for j in blocked[position + 1 :]
        )
        short = shortfall(sum_amounts([free, all_extras, later]), needed)
        if not short:
            continue
        donors = [
            u
            for u in units
            if u.is_gpu == is_gpu
            and u.job.phase in DONOR_PHASES
            and (u.job.namespace, u.job.name) not in blocked_keys
        ]
        if is_gpu:
            # GPUs cannot be overcommitted: freeing fewer than the job needs only idles them.
            releasable = sum((max(0, u.replicas - u.low) * u.gpu for u in donors), Decimal(0))
            if releasable < short[settings.gpu_resource]:
                # It waits (seed). Its pods that are not running hold no GPU, so the idle GPUs
                # still go to the least fulfilled jobs instead of idling behind a job that cannot
                # start; once enough is releasable it takes its share as above.
                for dim, amount in unplaced_part.get(key, {}).items():
                    free[dim] += amount
                all_extras = sum_amounts(
                    [all_extras, {k: -v for k, v in extra_part.get(key, {}).items()}]
                )
                continue
        wanted = describe(short, settings.gpu_resource)
        while short:
            candidates = [
                u
                for u in donors
                if u.replicas > u.low
                and u.steps_down < settings.max_step
                and any(u.load.get(d, Decimal(0)) > 0 for d in short)
            ]
            if not candidates:
                break
            unit = min(candidates, key=_donor_order)
            unit.replicas -= 1
            unit.steps_down += 1
            for dim, amount in unit.load.items():
                free[dim] += amount
            if not unit.reason:
                unit.reason = f"job {job.namespace}/{job.name} needs {wanted} to reach its minimum"
            short = shortfall(sum_amounts([free, all_extras, later]), needed)


def _donor_order(unit: _Unit) -> tuple[Any, ...]:
    """Tasks out of their cooldown give first (their workers are not just restarting), then the
    most fulfilled."""
    return (unit.cooling, *_most_fulfilled_first(unit))


def growth_needed(replicas: int, high: int, min_growth: float) -> int:
    """The fewest instances a task at `replicas` may grow by: `min_growth` of its replicas, at
    least one, at most what takes it to its maximum `high`."""
    return max(1, min(high - replicas, math.ceil(min_growth * replicas)))


def _fill_idle(
    units: Sequence[_Unit], free: dict[str, Decimal], classes: _Classes, min_growth: float
) -> None:
    """Hand idle capacity out one instance at a time to the least fulfilled task that fits.

    When a task would grow by less than `growth_needed`, the last of those tasks in the hand-out
    order is left out and the capacity handed out again, until every task that grows grows
    enough: idle capacity that several tasks would share too thinly goes to fewer of them."""
    growing = [
        u
        for u in units
        if u.job.phase in SCALE_UP_PHASES
        and u.steps_down == 0
        and u.replicas < u.high
        and not u.cooling
    ]
    start = {id(u): (u.replicas, u.reason) for u in growing}
    free_before = dict(free)
    while True:
        _hand_out(growing, free, classes)
        too_small = [
            u
            for u in growing
            if 0 < u.replicas - start[id(u)][0] < growth_needed(start[id(u)][0], u.high, min_growth)
        ]
        if not too_small:
            return
        for unit in growing:
            unit.replicas, unit.reason = start[id(unit)]
        free.clear()
        free.update(free_before)
        dropped = max(too_small, key=_least_fulfilled_first)
        growing = [u for u in growing if u is not dropped]


def _hand_out(growing: Sequence[_Unit], free: dict[str, Decimal], classes: _Classes) -> None:
    while True:
        fitting = [
            u
            for u in growing
            if u.replicas < u.high and all(free[d] >= amount for d, amount in u.load.items())
        ]
        if not fitting:
            return
        unit = min(fitting, key=_least_fulfilled_first)
        if not unit.reason:
            idle = {d: max(free[d], Decimal(0)) for d in classes.dims(unit.is_gpu)}
            unit.reason = f"{describe(idle, classes.gpu)} idle"
        unit.replicas += 1
        for dim, amount in unit.load.items():
            free[dim] -= amount
