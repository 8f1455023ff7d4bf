"""Over random clusters, the plan converges, stays put, and respects every bound."""

from __future__ import annotations

from decimal import Decimal

from elastic_builders import (
    GPU,
    apply,
    cpu_nodes,
    fixed,
    foreign_pod,
    gpu_nodes,
    job,
    pods_of_all,
    task,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.elastic.decide.plan import ElasticSettings, plan_elastic
from controller.elastic.decide.views import ElasticJobView, NodeView, PodView, TaskView


@st.composite
def task_views(draw: st.DrawFn, gpu_cluster: bool) -> TaskView:
    gpu = draw(st.integers(0, 2)) if gpu_cluster else 0
    cpu = draw(st.sampled_from(["250m", "500m", "1", "2"]))
    memory = draw(st.sampled_from(["512Mi", "1Gi", "4Gi"]))
    cpu_limit = draw(st.sampled_from([None, "1", "3"]))
    if draw(st.booleans()):
        low = draw(st.integers(1, 4))
        high = draw(st.integers(low + 1, low + 6))
        current = draw(st.integers(low, high))
        return task(current, low, high, gpu=gpu, cpu=cpu, memory=memory, cpu_limit=cpu_limit)
    return fixed(draw(st.integers(1, 4)), gpu=gpu, cpu=cpu, memory=memory, cpu_limit=cpu_limit)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[ElasticJobView], list[NodeView], list[PodView], int]:
    gpu_cluster = draw(st.booleans())
    count = draw(st.integers(1, 3))
    if gpu_cluster:
        nodes = gpu_nodes(count, gpu=draw(st.integers(1, 8)), cpu="64", memory="256Gi")
    else:
        nodes = cpu_nodes(count, cpu=draw(st.sampled_from(["4", "8", "16"])), memory="32Gi")
    jobs = []
    for i in range(draw(st.integers(1, 5))):
        tasks = draw(st.lists(task_views(gpu_cluster), min_size=1, max_size=2))
        named = [TaskView(**{**t.__dict__, "name": f"t{k}"}) for k, t in enumerate(tasks)]
        phase = draw(st.sampled_from(["Running", "Running", "Pending", "Completed"]))
        jobs.append(job(f"j{i}", *named, phase=phase, created=f"2026-01-01T00:00:0{i}Z"))
    others = (
        [foreign_pod("other", gpu=draw(st.integers(0, 2)), cpu="1")] if draw(st.booleans()) else []
    )
    return jobs, nodes, others, draw(st.integers(1, 3))


def _gpu_planned(jobs: list[ElasticJobView], others: list[PodView]) -> Decimal:
    """GPUs held by the running jobs' planned replicas and by the other pods. A Pending job's
    pods are not placed here; the plan keeps room for the ones it can make room for (the table
    tests pin that down), while a job that waits leaves idle GPUs to the others (seed)."""
    planned = sum(
        (
            t.requests.get(GPU, Decimal(0)) * t.replicas
            for j in jobs
            if j.phase == "Running"
            for t in j.tasks
        ),
        Decimal(0),
    )
    return planned + sum((p.requests.get(GPU, Decimal(0)) for p in others), Decimal(0))


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_rounds_converge_and_then_change_nothing(
    cluster: tuple[list[ElasticJobView], list[NodeView], list[PodView], int],
) -> None:
    jobs, nodes, others, max_step = cluster
    config = ElasticSettings(max_step=max_step)
    capacity = sum((n.allocatable.get(GPU, Decimal(0)) for n in nodes), Decimal(0))
    bounds = {(j.name, t.name): t for j in jobs for t in j.tasks}
    elastic_range = sum(
        (t.max_replicas or 0) - (t.min_replicas or 0) for t in bounds.values() if t.is_elastic
    )
    for _ in range(elastic_range * 2 + 2):
        decisions = plan_elastic(jobs, nodes, [*pods_of_all(jobs), *others], config)
        if not decisions:
            break
        # The plan does not depend on whether a Running job's pods exist yet.
        assert plan_elastic(jobs, nodes, [*others], config) == decisions
        for decision in decisions:
            spec = bounds[(decision.job, decision.task)]
            assert spec.is_elastic
            assert spec.min_replicas is not None and spec.max_replicas is not None
            assert spec.min_replicas <= decision.to_replicas <= spec.max_replicas
            step = decision.from_replicas - decision.to_replicas
            assert step <= max_step
            assert decision.reason.startswith(
                f"Scaled task {decision.task} {decision.from_replicas}→{decision.to_replicas}: "
            )
        grew_gpu = any(
            d.scales_up and bounds[(d.job, d.task)].requests.get(GPU, Decimal(0)) > 0
            for d in decisions
        )
        jobs = apply(jobs, decisions)
        if grew_gpu:
            # Idle GPUs are handed out, never more than there are.
            assert _gpu_planned(jobs, others) <= capacity
    else:
        raise AssertionError("the plan did not reach a fixed point")
    for _ in range(3):
        assert plan_elastic(jobs, nodes, [*pods_of_all(jobs), *others], config) == []
