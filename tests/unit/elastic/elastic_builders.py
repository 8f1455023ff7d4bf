"""Small builders for elastic plan tests: views of jobs, nodes and pods, and a simulated round."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from decimal import Decimal

from controller.elastic.decide.plan import ElasticSettings, ScaleDecision, plan_elastic
from controller.elastic.decide.views import ElasticJobView, NodeView, PodView, TaskView
from shared import quantity

GPU = "nvidia.com/gpu"


def amounts(gpu: int = 0, cpu: str = "1", memory: str = "1Gi") -> dict[str, Decimal]:
    out = {"cpu": quantity.parse(cpu), "memory": quantity.parse(memory)}
    if gpu:
        out[GPU] = Decimal(gpu)
    return out


def task(
    replicas: int,
    low: int | None = 1,
    high: int | None = 6,
    *,
    name: str = "worker",
    gpu: int = 1,
    cpu: str = "1",
    memory: str = "1Gi",
    cpu_limit: str | None = None,
    memory_limit: str | None = None,
    min_available: int | None = None,
) -> TaskView:
    requests = amounts(gpu, cpu, memory)
    limits = amounts(gpu, cpu_limit or cpu, memory_limit or memory)
    return TaskView(
        name=name,
        replicas=replicas,
        min_replicas=low,
        max_replicas=high,
        min_available=min_available,
        requests=requests,
        limits=limits,
    )


def fixed(replicas: int, **kwargs: object) -> TaskView:
    """A non-elastic task (no minReplicas/maxReplicas)."""
    return task(replicas, None, None, **kwargs)  # type: ignore[arg-type]


def job(
    name: str,
    *tasks: TaskView,
    phase: str = "Running",
    namespace: str = "default",
    min_available: int | None = None,
    created: str = "",
) -> ElasticJobView:
    return ElasticJobView(
        namespace=namespace,
        name=name,
        phase=phase,
        tasks=tasks,
        min_available=min_available,
        created=created,
    )


def gpu_nodes(count: int, gpu: int = 4, cpu: str = "64", memory: str = "256Gi") -> list[NodeView]:
    return [
        NodeView(name=f"node-{i}", allocatable=amounts(gpu, cpu, memory))
        for i in range(1, count + 1)
    ]


def cpu_nodes(count: int, cpu: str = "8", memory: str = "32Gi") -> list[NodeView]:
    return gpu_nodes(count, 0, cpu, memory)


def pods_of(view: ElasticJobView, phase: str = "Running") -> list[PodView]:
    """One pod per planned instance of every task, in `phase`."""
    return [
        PodView(
            namespace=view.namespace,
            name=f"{view.name}-{t.name}-{i}",
            phase=phase,
            requests=t.requests,
            limits=t.limits,
            job=view.name,
            task=t.name,
            index=i,
        )
        for t in view.tasks
        for i in range(t.replicas)
    ]


def pods_of_all(views: Iterable[ElasticJobView]) -> list[PodView]:
    return [p for v in views if v.phase == "Running" for p in pods_of(v)]


def foreign_pod(
    name: str, gpu: int = 0, cpu: str = "0", memory: str = "0", **kw: object
) -> PodView:
    return PodView(
        namespace="default",
        name=name,
        phase=str(kw.get("phase", "Running")),
        requests=amounts(gpu, cpu, memory),
        limits=amounts(gpu, cpu, memory),
        terminating=bool(kw.get("terminating", False)),
    )


def changes(decisions: Sequence[ScaleDecision]) -> dict[str, tuple[int, int]]:
    return {f"{d.job}/{d.task}": (d.from_replicas, d.to_replicas) for d in decisions}


def apply(
    jobs: Sequence[ElasticJobView], decisions: Sequence[ScaleDecision]
) -> list[ElasticJobView]:
    """The jobs after the decisions were written to their specs."""
    wanted = {(d.namespace, d.job, d.task): d.to_replicas for d in decisions}
    out = []
    for view in jobs:
        tasks = tuple(
            replace(t, replicas=wanted.get((view.namespace, view.name, t.name), t.replicas))
            for t in view.tasks
        )
        out.append(replace(view, tasks=tasks))
    return out


def settle(
    jobs: Sequence[ElasticJobView],
    nodes: Sequence[NodeView],
    extra_pods: Sequence[PodView] = (),
    settings: ElasticSettings | None = None,
    max_rounds: int = 200,
) -> tuple[list[ElasticJobView], int]:
    """Plan and apply until a round changes nothing; pods of Running jobs follow their specs."""
    current = list(jobs)
    for rounds in range(max_rounds):
        pods = [*pods_of_all(current), *extra_pods]
        decisions = plan_elastic(current, nodes, pods, settings or ElasticSettings())
        if not decisions:
            return current, rounds
        current = apply(current, decisions)
    raise AssertionError(f"no fixed point after {max_rounds} rounds: {current}")


def replicas(jobs: Iterable[ElasticJobView]) -> dict[str, int]:
    return {f"{j.name}/{t.name}": t.replicas for j in jobs for t in j.tasks}
