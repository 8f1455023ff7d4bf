"""Plot an elastic run: replicas of each job over time, from docs/elastic-run.json.

    VCJOB_RECORD_ELASTIC=1 .venv/bin/pytest tests/e2e/elastic -k share  # docs/elastic-run.json
    .venv/bin/python bench/elastic_plot.py                              # docs/elastic-replicas.png

Top: the worker replicas the autoscaler wrote into each job's spec. Bottom: the worker pods
actually Running (one GPU each), stacked, against the cluster's GPUs; the gap between the two
panels is the time the controller and the scheduler take to follow a decision.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

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
    # Equal counts would hide each other: each job's line is nudged a little.
    for offset, job in zip((-0.06, 0.0, 0.06), jobs, strict=False):
        replicas = [value + offset for value in spec_series(samples, job)]
        spec_axes.step(times, replicas, where="post", color=COLORS.get(job), linewidth=2, label=job)
    spec_axes.set_ylabel("worker replicas (spec)")
    # Headroom above the lines for the event labels.
    spec_axes.set_ylim(0, run["gpus"] + 3)
    spec_axes.legend(loc="upper right", fontsize=8)
    spec_axes.set_title("Elastic autoscaler: a and b (1..6 workers) share 8 GPUs with c (3 GPUs)")

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
    for mark in run.get("marks", []):
        for axes in (spec_axes, used_axes):
            axes.axvline(mark["t"], color="black", linewidth=0.6, alpha=0.4)
        spec_axes.text(
            mark["t"] + 0.15, run["gpus"] + 2.8, mark["label"], rotation=90, va="top", fontsize=7
        )
    figure.tight_layout()
    figure.savefig(output)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=DOCS / "elastic-run.json")
    parser.add_argument("--output", type=Path, default=DOCS / "elastic-replicas.png")
    args = parser.parse_args()
    plot(json.loads(args.input.read_text()), args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
