"""The fulfillment-score autoscaler, rule by rule (seed: Elastic Deep Learning)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal

import pytest
from elastic_builders import (
    GPU,
    apply,
    changes,
    cpu_nodes,
    fixed,
    foreign_pod,
    gpu_nodes,
    job,
    pods_of,
    pods_of_all,
    replicas,
    settle,
    task,
)

from controller.elastic.decide.plan import ElasticSettings, has_elastic_work, plan_elastic
from controller.elastic.decide.views import ElasticJobView, NodeView, PodView


@dataclass
class Case:
    id: str
    jobs: list[ElasticJobView]
    nodes: list[NodeView]
    want: dict[str, tuple[int, int]]
    extra_pods: list[PodView] = field(default_factory=list)
    pods: list[PodView] | None = None  # default: every Running job's instances exist and run
    max_step: int = 1


def _a_with_some_pods() -> tuple[list[ElasticJobView], list[PodView]]:
    a, b = job("a", task(6)), job("b", task(1))
    return [a, b], [*pods_of(a)[:2], *pods_of(b)]


def _a_with_leftover_pods() -> tuple[list[ElasticJobView], list[PodView]]:
    a, b = job("a", task(2)), job("b", task(1))
    leftovers = pods_of(job("a", task(4)))
    return [a, b], [*leftovers, *pods_of(b)]


CASES = [
    # -- idle capacity goes to the least fulfilled Running job -------------------------------
    Case("gpu-fill-idle-up-to-max", [job("a", task(1))], gpu_nodes(2), {"a/worker": (1, 6)}),
    Case(
        "least-fulfilled-first-one-instance-at-a-time",
        [job("a", task(3)), job("b", task(1))],
        gpu_nodes(2),
        {"a/worker": (3, 4), "b/worker": (1, 4)},
    ),
    Case("fulfilled-task-takes-nothing", [job("a", task(6))], gpu_nodes(2), {}),
    Case(
        "only-an-instance-that-fits",
        [job("a", task(1, 1, 4, gpu=2)), job("b", task(2))],
        gpu_nodes(1, gpu=5),
        {"b/worker": (2, 3)},
    ),
    Case(
        "only-running-jobs-scale-up",
        [job("a", task(1), phase="Pending"), job("z", task(1), phase="Restarting")],
        gpu_nodes(2),
        {},
        pods=[],
    ),
    Case(
        "non-elastic-tasks-never-change",
        [job("a", fixed(1)), job("b", task(2, 2, 2))],
        gpu_nodes(2),
        {},
    ),
    Case(
        "each-elastic-task-scales-on-its-own",
        [job("a", task(1, 1, 4), fixed(1, name="ps", gpu=0))],
        gpu_nodes(1),
        {"a/worker": (1, 4)},
    ),
    # -- capacity ----------------------------------------------------------------------------
    Case(
        "cpu-capacity-counts-limits-not-requests",
        [job("a", task(1, 1, 8, gpu=0, cpu="1", cpu_limit="2"))],
        cpu_nodes(1, cpu="8", memory="64Gi"),
        {"a/worker": (1, 4)},
    ),
    Case(
        "gpu-other-pods-hold-gpus-finished-and-terminating-do-not",
        [job("a", task(1, 1, 8))],
        gpu_nodes(2),
        {"a/worker": (1, 6)},
        extra_pods=[
            foreign_pod("x", gpu=2),
            foreign_pod("y", gpu=2, phase="Succeeded"),
            foreign_pod("z", gpu=2, terminating=True),
        ],
    ),
    Case(
        "unschedulable-nodes-do-not-count",
        [job("a", task(1, 1, 8))],
        [*gpu_nodes(1), NodeView("node-2", {GPU: Decimal(4)}, schedulable=False)],
        {"a/worker": (1, 4)},
    ),
    Case(
        "planned-instances-hold-capacity-before-their-pods-exist",
        _a_with_some_pods()[0],
        gpu_nodes(2),
        {"b/worker": (1, 2)},
        pods=_a_with_some_pods()[1],
    ),
    Case(
        "pods-beyond-the-spec-are-released",
        _a_with_leftover_pods()[0],
        gpu_nodes(1),
        {"b/worker": (1, 2)},
        pods=_a_with_leftover_pods()[1],
    ),
    # -- ties --------------------------------------------------------------------------------
    Case(
        "tie-more-gpus-per-instance-first",
        [job("a", task(1, 1, 3)), job("b", task(1, 1, 3, gpu=2))],
        gpu_nodes(1, gpu=5),
        {"b/worker": (1, 2)},
    ),
    Case(
        "tie-then-larger-cpu-request",
        [job("a", task(1, 1, 3, cpu="1")), job("b", task(1, 1, 3, cpu="2"))],
        gpu_nodes(1, gpu=3),
        {"b/worker": (1, 2)},
    ),
    Case(
        "tie-then-larger-memory-request",
        [job("a", task(1, 1, 3, memory="1Gi")), job("b", task(1, 1, 3, memory="2Gi"))],
        gpu_nodes(1, gpu=3),
        {"b/worker": (1, 2)},
    ),
    Case(
        "tie-then-namespace-and-name",
        [job("b", task(1, 1, 3)), job("a", task(1, 1, 3))],
        gpu_nodes(1, gpu=3),
        {"a/worker": (1, 2)},
    ),
    Case(
        "tie-on-scale-down-the-larger-instance-gives-first",
        [
            job("a", task(3, 1, 5, cpu="1")),
            job("b", task(3, 1, 5, cpu="2")),
            job("c", fixed(1), phase="Pending"),
        ],
        gpu_nodes(1, gpu=6),
        {"b/worker": (3, 2)},
    ),
    # -- a job below its minimum takes from the most fulfilled --------------------------------
    Case(
        "gpu-pending-job-takes-from-the-most-fulfilled",
        [job("a", task(5)), job("b", task(3)), job("c", fixed(1), phase="Pending")],
        gpu_nodes(2),
        {"a/worker": (5, 4)},
    ),
    Case(
        "at-most-max-step-per-task-per-round",
        [job("a", task(5)), job("b", task(3)), job("c", fixed(3), phase="Pending")],
        gpu_nodes(2),
        {"a/worker": (5, 4), "b/worker": (3, 2)},
    ),
    Case(
        "a-larger-max-step-keeps-taking-from-the-most-fulfilled",
        [job("a", task(5)), job("b", task(3)), job("c", fixed(3), phase="Pending")],
        gpu_nodes(2),
        {"a/worker": (5, 2)},
        max_step=3,
    ),
    Case(
        "a-pending-elastic-job-below-its-minimum-takes-too",
        [job("a", task(6)), job("d", task(4, 3, 6), phase="Pending")],
        gpu_nodes(2),
        {"a/worker": (6, 5)},
    ),
    Case(
        "only-the-taker-s-minimum-counts-its-other-replicas-wait",
        [
            job("a", task(4)),
            job("b", task(4)),
            job("c", fixed(4, min_available=2), phase="Pending"),
        ],
        gpu_nodes(2),
        {"a/worker": (4, 3), "b/worker": (4, 3)},
    ),
    Case(
        "a-pending-job-already-running-its-minimum-takes-nothing",
        [job("a", task(5)), job("b", task(3)), job("c", fixed(1), phase="Pending")],
        gpu_nodes(2),
        {},
        pods=[
            *pods_of_all([job("a", task(5)), job("b", task(3))]),
            *pods_of(job("c", fixed(1))),
        ],
    ),
    Case(
        "nothing-below-min-replicas",
        [job("a", task(4, 4, 6)), job("b", task(4, 4, 6)), job("c", fixed(1), phase="Pending")],
        gpu_nodes(2),
        {},
    ),
    Case(
        "only-pending-or-running-jobs-give",
        [
            job("a", task(5), phase="Restarting"),
            job("b", task(3, 3, 6)),
            job("c", fixed(1), phase="Pending"),
        ],
        gpu_nodes(2),
        {},
    ),
    Case(
        "a-pending-donor-gives-too",
        [job("a", task(5), phase="Pending"), job("c", fixed(4), phase="Pending")],
        gpu_nodes(2),
        {"a/worker": (5, 4)},
        pods=pods_of(job("a", task(5))),
    ),
    Case(
        "gpu-the-new-job-waits-when-not-enough-can-be-freed",
        [job("a", task(2, 1, 6)), job("b", task(2, 2, 4)), job("c", fixed(3), phase="Pending")],
        gpu_nodes(1),
        {},
    ),
    Case(
        "gpu-a-waiting-job-leaves-the-idle-gpus-to-the-others",
        [job("a", task(2, 1, 6)), job("c", fixed(16), phase="Pending")],
        gpu_nodes(2),
        {"a/worker": (2, 6)},
    ),
    Case(
        "cpu-what-can-be-freed-is-freed-the-job-is-scheduled-optimistically",
        [
            job("a", task(2, 1, 6, gpu=0)),
            job("b", task(2, 2, 4, gpu=0)),
            job("c", fixed(3, gpu=0), phase="Pending"),
        ],
        cpu_nodes(1, cpu="4", memory="64Gi"),
        {"a/worker": (2, 1)},
    ),
    Case(
        "cpu-job-does-not-take-from-gpu-jobs",
        [job("a", task(4, 1, 4, cpu="1")), job("c", fixed(2, gpu=0, cpu="1"), phase="Pending")],
        gpu_nodes(1, gpu=4, cpu="4"),
        {},
    ),
    Case(
        "cpu-pending-job-takes-from-the-most-fulfilled-cpu-job",
        [
            job("a", task(6, 1, 6, gpu=0, cpu="1")),
            job("b", task(2, 1, 6, gpu=0, cpu="1")),
            job("c", fixed(1, gpu=0, cpu="1"), phase="Pending"),
        ],
        cpu_nodes(1, cpu="8", memory="64Gi"),
        {"a/worker": (6, 5)},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_plan(case: Case) -> None:
    pods = pods_of_all(case.jobs) if case.pods is None else case.pods
    decisions = plan_elastic(
        case.jobs, case.nodes, [*pods, *case.extra_pods], ElasticSettings(max_step=case.max_step)
    )
    assert changes(decisions) == case.want


def test_reason_for_idle_gpus() -> None:
    (decision,) = plan_elastic(
        [job("a", task(1))], gpu_nodes(2), pods_of(job("a", task(1))), ElasticSettings()
    )
    assert decision.reason == "Scaled task worker 1→6: 7 GPUs idle"
    assert decision.scales_up


def test_reason_for_idle_cpu_and_memory() -> None:
    a = job("a", task(1, 1, 8, gpu=0, cpu="500m", memory="1Gi"))
    (decision,) = plan_elastic(
        [a], cpu_nodes(1, cpu="4", memory="8Gi"), pods_of(a), ElasticSettings()
    )
    assert decision.reason == "Scaled task worker 1→8: 3500m CPU and 7Gi memory idle"


def test_reason_for_taking_from_the_most_fulfilled() -> None:
    jobs = [job("a", task(5)), job("b", task(3)), job("c", fixed(1), phase="Pending")]
    (decision,) = plan_elastic(jobs, gpu_nodes(2), pods_of_all(jobs), ElasticSettings())
    assert (
        decision.reason == "Scaled task worker 5→4: job default/c needs 1 GPU to reach its minimum"
    )
    assert not decision.scales_up


def test_the_gpu_resource_name_is_a_setting() -> None:
    tpu = {"example.com/tpu": Decimal(1)}
    worker = task(1, 1, 6, gpu=0)
    a = job("a", replace(worker, requests={**worker.requests, **tpu}))
    nodes = [NodeView("n", {**gpu_nodes(1)[0].allocatable, "example.com/tpu": Decimal(3)})]
    decisions = plan_elastic([a], nodes, [], ElasticSettings(gpu_resource="example.com/tpu"))
    assert changes(decisions) == {"a/worker": (1, 3)}


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_step must be at least 1"):
        ElasticSettings(max_step=0)


def test_the_shared_cluster_story_converges_and_stays() -> None:
    """Two elastic jobs share 8 GPUs, a third needs 3, finishes, and they grow back."""
    nodes = gpu_nodes(2)
    jobs, _ = settle([job("a", task(1)), job("b", task(1))], nodes)
    assert replicas(jobs) == {"a/worker": 4, "b/worker": 4}

    jobs, rounds = settle([*jobs, job("c", fixed(3), phase="Pending")], nodes)
    assert rounds == 2  # one instance per task per round
    assert replicas(jobs) == {"a/worker": 2, "b/worker": 3, "c/worker": 3}

    done = [j if j.name != "c" else replace(j, phase="Completed") for j in jobs]
    jobs, _ = settle(done, nodes)
    assert replicas(jobs) == {"a/worker": 4, "b/worker": 4, "c/worker": 3}
    for _ in range(5):
        assert plan_elastic(jobs, nodes, pods_of_all(jobs), ElasticSettings()) == []


def test_a_plan_applied_is_a_fixed_point() -> None:
    jobs = [job("a", task(1)), job("b", task(2, 1, 4, gpu=2)), job("c", task(1, 1, 3, cpu="2"))]
    nodes = gpu_nodes(3)
    decisions = plan_elastic(jobs, nodes, pods_of_all(jobs), ElasticSettings())
    assert decisions
    after = apply(jobs, decisions)
    # Whether or not the controller has created the new pods yet, the next round changes nothing.
    assert plan_elastic(after, nodes, pods_of_all(jobs), ElasticSettings()) == []
    assert plan_elastic(after, nodes, pods_of_all(after), ElasticSettings()) == []


def test_jobs_waiting_for_room_are_served_oldest_first() -> None:
    jobs = [
        job("a", task(2, 1, 6)),
        job("b", task(2, 2, 4)),
        job("c", fixed(1), phase="Pending", created="2026-01-01T00:00:02Z"),
        job("d", fixed(1), phase="Pending", created="2026-01-01T00:00:01Z"),
    ]
    (decision,) = plan_elastic(jobs, gpu_nodes(1), pods_of_all(jobs), ElasticSettings())
    assert (decision.job, decision.to_replicas) == ("a", 1)
    assert "job default/d needs 1 GPU" in decision.reason


def test_a_waiting_job_gives_nothing_to_a_later_one() -> None:
    """Every GPU is held by a Running job. The first Pending job cannot get its minimum and
    waits, so what it would hold goes back to the free count; shrinking its elastic task for the
    next Pending job would count those GPUs twice and hand a GPU that does not exist to the
    Running job."""
    running = job("a", task(1, 1, 2, gpu=1), fixed(4, gpu=2))
    waiting = job("b", task(2, 1, 2, gpu=2), phase="Pending", created="2026-01-01T00:00:01Z")
    later = job("c", fixed(1, gpu=1), phase="Pending", created="2026-01-01T00:00:02Z")
    jobs = [running, waiting, later]
    assert plan_elastic(jobs, gpu_nodes(3, gpu=3), pods_of_all(jobs), ElasticSettings()) == []


@pytest.mark.parametrize(
    ("views", "work"),
    [
        pytest.param([], False, id="no jobs"),
        pytest.param([job("a", fixed(2))], False, id="no elastic task"),
        pytest.param([job("a", task(2))], True, id="a running elastic task"),
        pytest.param([job("a", task(2), phase="Pending")], True, id="a pending elastic task"),
        pytest.param([job("a", task(2), phase="Restarting")], True, id="a restarting one"),
        pytest.param(
            [job("a", task(2), phase="Completed"), job("b", task(2), phase="Failed")],
            False,
            id="only finished elastic jobs",
        ),
        pytest.param(
            [job("a", task(2), phase="Aborted"), job("b", fixed(1))],
            False,
            id="an aborted elastic job and a fixed one",
        ),
    ],
)
def test_has_elastic_work(views: list[ElasticJobView], work: bool) -> None:
    assert has_elastic_work(views) is work
