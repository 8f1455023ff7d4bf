"""Plot elastic runs: an end-to-end run's replicas, and a trace replay with the autoscaler on/off.

    VCJOB_RECORD_ELASTIC=1 .venv/bin/pytest tests/e2e/elastic -k share  # docs/elastic-run.json
    .venv/bin/python bench/elastic_plot.py                              # docs/elastic-replicas.png
    .venv/bin/python bench/elastic_trace.py                   # docs/elastic-trace-run.json
    .venv/bin/python bench/elastic_plot.py --trace            # docs/elastic-trace.png

elastic-replicas.png, top: the worker replicas the autoscaler wrote into each job's spec. Bottom:
the worker pods actually Running (one GPU each), stacked, against the cluster's GPUs; the gap
between the two panels is the time the controller and the scheduler take to follow a decision.

elastic-trace.png, top: GPUs held by Running pods over time, autoscaler on and off. Bottom: the
job completion time distribution of both runs (share of jobs done within x seconds).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from matplotlib.transforms import blended_transform_factory

DOCS = Path(__file__).resolve().parent.parent / "docs"
COLORS = {"a": "tab:blue", "b": "tab:orange", "c": "tab:green"}


FINISHED = frozenset({"Completed", "Failed", "Terminated", "Aborted"})


def series(samples: list[dict[str, Any]], key: str, job: str) -> list[int]:
    return [int(sample[key].get(job, 0)) for sample in samples]


def spec_series(samples: list[dict[str, Any]], job: str) -> list[float]:
    """The spec's replicas while the job exists and has not finished (NaN: no line)."""
    return [
        float(sample["replicas"][job])
        if job in sample["replicas"] and sample.get("phase", {}).get(job) not in FINISHED
        else float("nan")
        for sample in samples
    ]


def plot(run: dict[str, Any], output: Path) -> None:
    samples = run["samples"]
    times = [sample["t"] for sample in samples]
    jobs = sorted({job for sample in samples for job in sample["replicas"]})
    figure, (spec_axes, used_axes) = plt.subplots(
        2, 1, sharex=True, figsize=(9, 6.5), dpi=110, gridspec_kw={"height_ratios": [1, 1]}
    )
    # Lines are drawn at their true values; where counts are equal, each later job's line is drawn
    # thinner on top of the earlier ones, so all stay visible.
    top = 1
    for order, job in enumerate(jobs):
        replicas = spec_series(samples, job)
        top = max([top, *(int(value) for value in replicas if value == value)])
        spec_axes.step(
            times,
            replicas,
            where="post",
            color=COLORS.get(job),
            linewidth=5.0 - 1.6 * order,
            label=job,
        )
    spec_axes.set_ylabel("worker replicas (spec)")
    spec_axes.set_ylim(0, top + 1)
    spec_axes.legend(loc="lower right", fontsize=8)
    figure.suptitle("Elastic autoscaler: a and b (1..6 workers) share 8 GPUs with c (3 GPUs)")

    used_axes.stackplot(
        times,
        [series(samples, "running", job) for job in jobs],
        labels=[f"{job} running" for job in jobs],
        colors=[COLORS.get(job, "tab:grey") for job in jobs],
        step="post",
        alpha=0.8,
    )
    used_axes.axhline(run["gpus"], color="black", linewidth=1, linestyle="--", label="GPUs")
    used_axes.set_ylabel("GPUs in use (running pods)")
    used_axes.set_xlabel("seconds")
    used_axes.set_ylim(0, run["gpus"] + 1)
    used_axes.legend(loc="upper right", fontsize=8)
    # Event labels sit above the top panel, so they take no room from the data.
    above = blended_transform_factory(spec_axes.transData, spec_axes.transAxes)
    for mark in run.get("marks", []):
        for axes in (spec_axes, used_axes):
            axes.axvline(mark["t"], color="black", linewidth=0.6, alpha=0.4)
        spec_axes.text(
            mark["t"], 1.02, mark["label"], transform=above, rotation=25, fontsize=7, va="bottom"
        )
    figure.tight_layout()
    figure.savefig(output)
    plt.close(figure)


def plot_trace(record: dict[str, Any], output: Path) -> None:
    figure, (used_axes, jct_axes) = plt.subplots(2, 1, figsize=(9, 7), dpi=110)
    gpus = record["on"]["gpus"]
    for label, color in (("off", "tab:grey"), ("on", "tab:blue")):
        samples = record[label]["samples"]
        used_axes.step(
            [sample["t"] for sample in samples],
            [sample["gpus_in_use"] for sample in samples],
            where="post",
            color=color,
            linewidth=1.4,
            label=f"autoscaler {label}",
        )
    used_axes.axhline(gpus, color="black", linewidth=1, linestyle="--", label=f"{gpus} GPUs")
    used_axes.set_ylim(0, gpus + 2)
    used_axes.set_xlabel("seconds since the first job was submitted")
    used_axes.set_ylabel("GPUs in use (running pods)")
    used_axes.legend(loc="lower center", fontsize=8)
    used_axes.set_title(f"Replay of {record['trace']} on 4 nodes x 8 GPUs ({record['date']})")
    for label, color in (("off", "tab:grey"), ("on", "tab:blue")):
        jobs = record[label]["jobs"].values()
        jct = sorted(job["finish"] - job["submit"] for job in jobs if job["finish"] is not None)
        shares = [(index + 1) / len(jct) for index in range(len(jct))]
        mean = sum(jct) / len(jct)
        jct_axes.step(
            jct, shares, where="post", color=color, label=f"autoscaler {label}: mean {mean:.0f} s"
        )
    jct_axes.set_xlabel("job completion time (s)")
    jct_axes.set_ylabel("share of jobs completed")
    jct_axes.set_ylim(0, 1.02)
    jct_axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(output)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="store_true", help="plot the trace replay instead")
    parser.add_argument("--input", type=Path)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.trace:
        source = args.input or DOCS / "elastic-trace-run.json"
        output = args.output or DOCS / "elastic-trace.png"
        plot_trace(json.loads(source.read_text()), output)
    else:
        source = args.input or DOCS / "elastic-run.json"
        output = args.output or DOCS / "elastic-replicas.png"
        plot(json.loads(source.read_text()), output)
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
