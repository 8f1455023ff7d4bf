"""Controller memory and reconcile latency with 10 000 pods in its cache.

    .venv/bin/python bench/scale.py [--jobs 100] [--replicas 100] [--steady 20]

The controller (a subprocess, 4 workers) creates JOBS x REPLICAS pods through the local API
server; then, with every pod cached, it reconciles every job on each resync (--resync, 5 s) for
STEADY seconds. Prints one figure per line: RSS in MB (target ≤ 250) and the p50/p99 reconcile
time in ms over the steady window (target p99 ≤ 50), from the controller's own histogram.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("_controllerbench", HERE / "_controllerbench.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

from kubeio.client import JOBS  # noqa: E402

HISTOGRAM = "controller_runtime_reconcile_time_seconds"


def bucket_delta(before: str, after: str) -> str:
    """The histogram lines of `after` minus `before` (a window of observations)."""
    old = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in before.splitlines()
        if line.startswith(f"{HISTOGRAM}_bucket")
    }
    lines = []
    for line in after.splitlines():
        if line.startswith(f"{HISTOGRAM}_bucket"):
            key, value = line.rsplit(" ", 1)
            lines.append(f"{key} {float(value) - old.get(key, 0.0)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--steady", type=float, default=20.0)
    parser.add_argument("--resync", default="5s", help="resync period during the steady window")
    args = parser.parse_args()
    total = args.jobs * args.replicas
    with bench.bare_cluster() as (cluster, tmp, kube):
        ctl = bench.ControllerProcess(
            cluster, tmp / "controller.log", "--workers", "4", "--resync-period", args.resync
        )
        try:
            rss_empty = ctl.rss_mb()
            start = time.monotonic()
            for j in range(args.jobs):
                kube.create(JOBS, "default", bench.job_body(f"scale-{j}", args.replicas))
            bench.wait_metric(ctl, "volcano_pod_creates_total", total, 1200)
            print(f"seconds to create {total} pods: {time.monotonic() - start:.1f}")
            time.sleep(3)  # let the watch deliver every pod and the queue settle
            before = ctl.metrics()
            cpu_before = ctl.cpu_seconds()
            time.sleep(args.steady)
            after = ctl.metrics()
            cpu = ctl.cpu_seconds() - cpu_before
            window = bucket_delta(before, after)
            count = ctl.metric(f"{HISTOGRAM}_count")
            p50 = bench.histogram_quantile(window, HISTOGRAM, 0.50)
            p99 = bench.histogram_quantile(window, HISTOGRAM, 0.99)
            reconciles = sum(
                float(line.rsplit(" ", 1)[1]) for line in window.splitlines() if 'le="+Inf"' in line
            )
            print(f"pods cached: {total}")
            rate = reconciles / args.steady
            print(f"reconciles per second in the steady window (resync {args.resync}): {rate:.0f}")
            print(f"reconciles in the steady window: {reconciles:.0f} (all: {count:.0f})")
            per_reconcile = 1000 * cpu / max(1.0, reconciles)
            print(f"controller CPU ms per reconcile (100-pod jobs): {per_reconcile:.1f}")
            print(f"reconcile p50 ms: {1000 * p50:.1f}")
            print(f"reconcile p99 ms (target <= 50): {1000 * p99:.1f}")
            print(f"controller RSS MB with no jobs: {rss_empty:.0f}")
            print(f"controller RSS MB (target <= 250): {ctl.rss_mb():.0f}")
        finally:
            ctl.stop()


if __name__ == "__main__":
    main()
