"""The elastic trace replay's figures, computed from hand-made records."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.bench.conftest import load

figures = load("elastic_figures")


def run(jobs: dict[str, tuple[float, float | None]], samples: list[tuple[float, int, int]]) -> Any:
    return {
        "gpus": 8,
        "jobs": {name: {"submit": s, "finish": f} for name, (s, f) in jobs.items()},
        "samples": [{"t": t, "gpus_in_use": g, "waiting": w} for t, g, w in samples],
        "resizes": 6,
    }


def test_completion_times_skip_unfinished_jobs() -> None:
    record = run({"a": (0.0, 10.0), "b": (5.0, 25.0), "c": (6.0, None)}, [])
    assert figures.completion_times(record) == {"a": 10.0, "b": 20.0}


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([5.0], 95, 5.0), ([1.0, 2.0, 3.0, 4.0, 5.0], 50, 3.0), (list(range(1, 102)), 95, 96.0)],
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert figures.percentile(values, q) == pytest.approx(expected)


def test_makespan_runs_from_first_submission_to_last_completion() -> None:
    assert figures.makespan(run({"a": (2.0, 10.0), "b": (5.0, 30.0)}, [])) == 28.0


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        pytest.param([(0, 8, 1), (1, 4, 1), (2, 0, 0)], 0.75, id="only samples with a waiting job"),
        pytest.param([(0, 2, 0)], None, id="nobody waited"),
    ],
)
def test_utilisation_while_waiting(samples: list[tuple[float, int, int]], expected: Any) -> None:
    assert figures.utilisation_while_waiting(run({}, samples)) == expected


def test_utilisation_over_the_run() -> None:
    assert figures.utilisation(run({}, [(0, 8, 0), (1, 4, 1), (2, 0, 0)])) == 0.5


def test_worst_slowdown_names_the_job() -> None:
    assert figures.worst_slowdown({"a": 11.0, "b": 5.0}, {"a": 10.0, "b": 10.0}) == (
        "a",
        pytest.approx(0.1),
    )
    name, ratio = figures.worst_slowdown({"a": 5.0, "b": 9.0}, {"a": 10.0, "b": 10.0})
    assert (name, ratio) == ("b", pytest.approx(-0.1))


@pytest.mark.parametrize(
    ("on", "expected"),
    [
        ({"a": 10.0, "b": 10.0}, (0, 0)),
        ({"a": 10.9, "b": 9.2}, (0, 0)),  # within 10 %
        ({"a": 11.5, "b": 8.5}, (1, 1)),
        ({"a": 20.0, "b": 12.0, "c": 1.0}, (2, 0)),  # a job not in the off run is not counted
    ],
)
def test_slowdown_counts(on: dict[str, float], expected: tuple[int, int]) -> None:
    assert figures.slowdown_counts(on, {"a": 10.0, "b": 10.0}) == expected


def test_figures_print_every_target() -> None:
    on = run({"a": (0.0, 6.0), "b": (0.0, 9.0)}, [(0, 8, 1)])
    off = run({"a": (0.0, 10.0), "b": (0.0, 10.0)}, [(0, 6, 1)])
    lines = dict(figures.figures(on, off))
    assert lines["mean JCT on/off (target <= 0.75)"] == "0.75"
    assert lines["GPU utilisation while jobs wait, on (target >= 0.9)"] == "1.00"
    assert lines["GPU utilisation while jobs wait, off"] == "0.75"
    assert lines["GPU utilisation over the run (on / off)"] == "1.00 / 0.75"
    assert lines["resizes per job (on)"] == "3.00"
    assert lines["worst single-job slowdown on vs off (target <= 10 %)"] == "-10 % (b)"
    assert lines["jobs >10 % slower / >10 % faster"] == "0 / 1"
