"""Resize cost awareness: with `min_growth` a task grows only by enough to pay for its restart."""

from __future__ import annotations

import pytest
from elastic_builders import changes, gpu_nodes, job, pods_of_all, settle, task

from controller.elastic.decide.plan import ElasticSettings, growth_needed, plan_elastic


@pytest.mark.parametrize(
    ("replicas", "high", "min_growth", "needed"),
    [
        pytest.param(4, 16, 0.0, 1, id="off: one instance is enough"),
        pytest.param(4, 16, 0.5, 2, id="half of 4"),
        pytest.param(8, 16, 0.5, 4, id="half of 8"),
        pytest.param(3, 16, 0.5, 2, id="rounded up"),
        pytest.param(8, 10, 0.5, 2, id="at most what reaches the maximum"),
        pytest.param(1, 4, 0.5, 1, id="at least one"),
    ],
)
def test_growth_needed(replicas: int, high: int, min_growth: float, needed: int) -> None:
    assert growth_needed(replicas, high, min_growth) == needed


@pytest.mark.parametrize(
    ("jobs", "gpus", "min_growth", "want"),
    [
        pytest.param([job("a", task(8, 8, 16))], 9, 0.0, {"a/worker": (8, 9)}, id="off: one GPU"),
        pytest.param([job("a", task(8, 8, 16))], 9, 0.5, {}, id="one GPU is not worth a restart"),
        pytest.param([job("a", task(8, 8, 16))], 12, 0.5, {"a/worker": (8, 12)}, id="four are"),
        pytest.param(
            [job("a", task(8, 8, 16)), job("b", task(1, 1, 4))],
            11,
            0.5,
            {"b/worker": (1, 3)},
            id="what a large task cannot use goes to a small one",
        ),
        pytest.param(
            [job("a", task(4, 4, 16)), job("b", task(4, 4, 16))],
            10,
            0.5,
            {"a/worker": (4, 6)},
            id="shared evenly it is too little for both: one of them grows",
        ),
    ],
)
def test_min_growth(
    jobs: list[object], gpus: int, min_growth: float, want: dict[str, tuple[int, int]]
) -> None:
    nodes = gpu_nodes(1, gpu=gpus)
    settings = ElasticSettings(min_growth=min_growth)
    decisions = plan_elastic(jobs, nodes, pods_of_all(jobs), settings)  # type: ignore[arg-type]
    assert changes(decisions) == want


def test_min_growth_settles_and_stays() -> None:
    nodes = gpu_nodes(3)
    settings = ElasticSettings(min_growth=0.5)
    jobs, _ = settle([job("a", task(2, 2, 8)), job("b", task(3, 3, 8))], nodes, settings=settings)
    assert plan_elastic(jobs, nodes, pods_of_all(jobs), settings) == []


def test_min_growth_is_checked() -> None:
    with pytest.raises(ValueError, match="min_growth must not be negative"):
        ElasticSettings(min_growth=-0.1)
