"""The pure parts of bench/controller.py: profiles' flags, ABBA order, median and range."""

from __future__ import annotations

import pytest

from tests.unit.bench.conftest import BENCH, load

cb = load("_controllerbench")
CHART = cb.ChartSettings(workers=4, qps=50.0, burst=100)


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("production", ["--workers", "4", "--qps", "50", "--burst", "100"]),
        ("unthrottled", ["--workers", "4", "--qps", "0"]),
    ],
)
def test_vcjob_flags(profile: str, expected: list[str]) -> None:
    assert cb.vcjob_flags(profile, CHART) == expected


def test_vcjob_flags_keep_a_fractional_qps() -> None:
    chart = cb.ChartSettings(workers=8, qps=12.5, burst=20)
    assert cb.vcjob_flags("production", chart) == [
        "--workers", "8", "--qps", "12.5", "--burst", "20",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("profile", "workers", "expected"),
    [
        ("production", 4, ["--worker-threads", "4"]),
        (
            "unthrottled",
            6,
            ["--worker-threads", "6", "--kube-api-qps", "10000", "--kube-api-burst", "10000"],
        ),
    ],
)
def test_volcano_flags(profile: str, workers: int, expected: list[str]) -> None:
    assert cb.volcano_flags(profile, workers) == expected


def test_chart_settings_come_from_the_charts_values() -> None:
    values = {"controller": {"workers": 4, "qps": 50, "burst": 100, "replicas": 1}}
    assert cb.chart_settings(values) == CHART
    # The checked-in chart parses to the same shape (whatever its values are).
    chart = cb.read_chart_settings(BENCH.parent / "charts" / "vcjob" / "values.yaml")
    assert chart.workers >= 1 and chart.burst >= 1


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("both", ("production", "unthrottled")),
        ("production", ("production",)),
        ("unthrottled", ("unthrottled",)),
    ],
)
def test_profiles_of(choice: str, expected: tuple[str, ...]) -> None:
    assert cb.profiles_of(choice) == expected


@pytest.mark.parametrize(
    ("round_index", "expected"),
    [(0, ["L", "A", "B"]), (1, ["B", "A", "L"]), (2, ["L", "A", "B"]), (3, ["B", "A", "L"])],
)
def test_abba(round_index: int, expected: list[str]) -> None:
    assert cb.abba(["L", "A", "B"], round_index) == expected


@pytest.mark.parametrize(
    ("values", "expected", "rendered"),
    [
        ([3.0, 1.0, 2.0], cb.Spread(2.0, 1.0, 3.0), "2.00 (1.00-3.00)"),
        ([4.0, 1.0], cb.Spread(2.5, 1.0, 4.0), "2.50 (1.00-4.00)"),
        ([1.5], cb.Spread(1.5, 1.5, 1.5), "1.50"),
    ],
)
def test_spread(values: list[float], expected: object, rendered: str) -> None:
    summary = cb.spread(values)
    assert summary == expected
    assert summary.render() == rendered


def test_spread_of_nothing() -> None:
    assert cb.spread([]) is None


def test_ratios_pair_rounds() -> None:
    assert cb.ratios([4.0, 6.0], [2.0, 3.0]) == [2.0, 2.0]
    assert cb.ratios([4.0], [0.0]) == []
    with pytest.raises(ValueError):
        cb.ratios([1.0], [1.0, 2.0])


@pytest.mark.parametrize(
    ("short", "dirty", "expected"),
    [("abc1234", False, "abc1234"), ("abc1234", True, "abc1234+dirty")],
)
def test_revision_label(short: str, dirty: bool, expected: str) -> None:
    assert cb.revision_label(short, dirty) == expected


@pytest.mark.parametrize(
    ("path", "nodes", "pods", "problem"),
    [
        ("default", 0, 1000, None),
        ("gang", 12, 1000, None),
        ("gang", 12, 1320, None),
        ("gang", 0, 10, "needs the node agent"),
        ("gang", 12, 1321, "do not fit"),
    ],
)
def test_gang_capacity_problem(path: str, nodes: int, pods: int, problem: str | None) -> None:
    found = cb.gang_capacity_problem(path, nodes, pods)
    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize(
    ("gang", "scheduler", "minimum"), [(True, "volcano", 5), (False, "default-scheduler", 1)]
)
def test_job_body_paths(gang: bool, scheduler: str, minimum: int) -> None:
    spec = cb.job_body("j", 5, gang=gang)["spec"]
    assert spec["schedulerName"] == scheduler and spec["queue"] == "default"
    assert spec["minAvailable"] == minimum
    assert [t["minAvailable"] for t in spec["tasks"]] == [minimum]
