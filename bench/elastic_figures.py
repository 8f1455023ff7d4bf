"""The figures of an elastic trace replay, from what a run recorded (pure: no cluster needed).

A run records, per job, when its create call returned and when a watch saw it Completed, and every
half second a sample: the GPUs held by Running pods and how many submitted jobs were waiting to
start (phase Pending, or none yet, for longer than a job takes to start on free GPUs).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TypedDict


class JobRecord(TypedDict):
    submit: float
    finish: float | None


class Sample(TypedDict):
    t: float
    gpus_in_use: int
    waiting: int  # jobs submitted and not yet started


class Run(TypedDict):
    gpus: int
    jobs: dict[str, JobRecord]
    samples: list[Sample]
    resizes: int  # replica changes the autoscaler applied


def completion_times(run: Run) -> dict[str, float]:
    """Seconds from submission to completion of every job that completed."""
    return {
        name: job["finish"] - job["submit"]
        for name, job in run["jobs"].items()
        if job["finish"] is not None
    }


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), interpolated between the closest ranks."""
    if not values:
        raise ValueError("no values")
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def makespan(run: Run) -> float:
    """From the first submission to the last completion."""
    finishes = [job["finish"] for job in run["jobs"].values() if job["finish"] is not None]
    return max(finishes) - min(job["submit"] for job in run["jobs"].values())


def utilisation_while_waiting(run: Run) -> float | None:
    """Mean share of the GPUs in use over the samples where some job waited (None: none did)."""
    busy = [s["gpus_in_use"] / run["gpus"] for s in run["samples"] if s["waiting"] > 0]
    return statistics.fmean(busy) if busy else None


def utilisation(run: Run) -> float:
    """Mean share of the GPUs in use over the whole run (first submission to last completion)."""
    return statistics.fmean(s["gpus_in_use"] / run["gpus"] for s in run["samples"])


def worst_slowdown(on: Mapping[str, float], off: Mapping[str, float]) -> tuple[str, float]:
    """The job that the autoscaler slowed down most, and by how much (0.1 = 10 % slower; a
    negative figure means every job was faster)."""
    ratios = {name: on[name] / off[name] - 1.0 for name in on if name in off and off[name] > 0}
    name = max(ratios, key=lambda key: (ratios[key], key))
    return name, ratios[name]


def slowdown_counts(
    on: Mapping[str, float], off: Mapping[str, float], margin: float = 0.1
) -> tuple[int, int]:
    """How many jobs were more than `margin` slower, and how many more than `margin` faster."""
    ratios = [on[name] / off[name] - 1.0 for name in on if name in off and off[name] > 0]
    return sum(r > margin for r in ratios), sum(r < -margin for r in ratios)


def figures(on: Run, off: Run) -> list[tuple[str, str]]:
    """One (label, value) per line of the benchmark's output."""
    jct_on, jct_off = completion_times(on), completion_times(off)
    mean_on, mean_off = statistics.fmean(jct_on.values()), statistics.fmean(jct_off.values())
    util_on, util_off = utilisation_while_waiting(on), utilisation_while_waiting(off)
    slow_job, slowdown = worst_slowdown(jct_on, jct_off)
    slower, faster = slowdown_counts(jct_on, jct_off)
    busy_off = utilisation(off)

    def share(value: float | None) -> str:
        return "no job waited" if value is None else f"{value:.2f}"

    return [
        ("jobs completed (on / off)", f"{len(jct_on)} / {len(jct_off)} of {len(on['jobs'])}"),
        ("mean JCT s (on / off)", f"{mean_on:.1f} / {mean_off:.1f}"),
        ("mean JCT on/off (target <= 0.75)", f"{mean_on / mean_off:.2f}"),
        (
            "p95 JCT s (on / off)",
            f"{percentile(list(jct_on.values()), 95):.1f} / "
            f"{percentile(list(jct_off.values()), 95):.1f}",
        ),
        ("makespan s (on / off)", f"{makespan(on):.1f} / {makespan(off):.1f}"),
        ("GPU utilisation while jobs wait, on (target >= 0.9)", share(util_on)),
        ("GPU utilisation while jobs wait, off", share(util_off)),
        ("GPU utilisation over the run (on / off)", f"{utilisation(on):.2f} / {busy_off:.2f}"),
        ("resizes per job (on)", f"{on['resizes'] / len(on['jobs']):.2f}"),
        (
            "worst single-job slowdown on vs off (target <= 10 %)",
            f"{100 * slowdown:+.0f} % ({slow_job})",
        ),
        ("jobs >10 % slower / >10 % faster", f"{slower} / {faster}"),
    ]
