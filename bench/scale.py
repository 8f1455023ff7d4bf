"""Controller and API server memory, reconcile latency and a restart, with JOBS x REPLICAS pods.

    .venv/bin/python bench/scale.py [--jobs 100] [--replicas 100] [--steady 20] [--resync 5s]
    .venv/bin/python bench/scale.py --jobs 5000 --replicas 5 --resync 20s    # 25 000 pods
    .venv/bin/python bench/scale.py --jobs 1000 --replicas 100 --resync 20s   # 100 000 pods

The cluster is `vcjob local up`'s real control plane (etcd, kube-apiserver, kube-controller-
manager, kube-scheduler) without nodes: the pods stay unscheduled, which is all a controller's
memory and its reconciles depend on.

The controller (a subprocess, 4 workers) creates JOBS x REPLICAS pods through the local API
server, which holds them all in memory; then, with every pod cached, it reconciles every job on
each resync for STEADY seconds. Prints one figure per line: the seconds to create the pods, the
controller's and the API server's RSS every 10 000 pods created (the growth curve) and at the end
(targets: controller ≤ 250 MB for 10 000 pods, ≤ 1 GB for 100 000), the seconds until the work
queue drained after the last pod, and over the steady window that follows: the reconcile rate,
the settled jobs the resyncs skipped, and the p50/p99 reconcile time in ms (target p99 ≤ 50) from
the controller's own histogram.

Then the restart (unless --no-restart): the controller is SIGKILLed with everything in place and a
new one started. Printed: the seconds until it is ready (every cache listed), until it acts again
(a Job created right after the start has its first pod: the new controller reconciled its backlog
of JOBS jobs to get there; target ≤ 30 s at 25 000 pods), and the requests it sent until then by
method: reads are its lists, writes are the storm a restart must not cause (a few, none per job).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

# bench/controller.py is named like the `controller` package: this folder goes last on the import
# path, behind the packages, and its helper modules are imported plainly.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]

import _controllerbench as bench  # noqa: E402

from kubeio.client import JOBS, Kube  # noqa: E402
from localcluster.running import LocalCluster  # noqa: E402

HISTOGRAM = "controller_runtime_reconcile_time_seconds"
SKIPS = "vcjob_resync_skipped_jobs_total"
DEPTH = "workqueue_depth"
CURVE_STEP = 10_000


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def create_with_curve(ctl: Any, api_pid: int, total: int, timeout: float) -> None:
    """Wait until the controller has created `total` pods, printing both processes' RSS (and the
    growth since the last line) each time another CURVE_STEP pods exist."""
    previous = (ctl.rss_mb(), rss_mb(api_pid))
    next_mark = min(CURVE_STEP, total)
    start = time.monotonic()
    while next_mark <= total:
        created = ctl.metric("volcano_pod_creates_total")
        if created >= next_mark:
            now = (ctl.rss_mb(), rss_mb(api_pid))
            grown = (now[0] - previous[0], now[1] - previous[1])
            print(
                f"RSS MB at {next_mark} pods: controller {now[0]:.0f} (+{grown[0]:.0f}),"
                f" API server {now[1]:.0f} (+{grown[1]:.0f}), {time.monotonic() - start:.0f} s",
                flush=True,
            )
            previous = now
            next_mark += CURVE_STEP
            continue
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{created:.0f} of {total} pods created in {timeout:.0f} s")
        time.sleep(0.2)


def wait_drained(ctl: Any, timeout: float) -> float:
    """Seconds until the controller's work queue is empty (the backlog of the creation worked
    off: the steady window then measures the steady state, not a queue catching up)."""
    start = time.monotonic()
    while ctl.metric(DEPTH) > 0:
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"work queue still not empty after {timeout:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--steady", type=float, default=20.0)
    parser.add_argument("--resync", default="5s", help="resync period during the steady window")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to create the pods")
    parser.add_argument(
        "--no-restart", dest="restart", action="store_false", help="skip the restart figures"
    )
    args = parser.parse_args()
    total = args.jobs * args.replicas
    with bench.bare_cluster() as (cluster, tmp, kube):
        ctl = bench.ControllerProcess(
            cluster, tmp / "controller.log", "--workers", "4", "--resync-period", args.resync
        )
        try:
            api_pid = cluster.component_pids()["kube-apiserver"]
            rss_empty, api_empty = ctl.rss_mb(), rss_mb(api_pid)
            print(f"controller RSS MB with no jobs: {rss_empty:.0f}")
            print(f"API server RSS MB with no jobs: {api_empty:.0f}")
            start = time.monotonic()
            for j in range(args.jobs):
                kube.create(JOBS, "default", bench.job_body(f"scale-{j}", args.replicas))
            create_with_curve(ctl, api_pid, total, args.timeout)
            print(f"seconds to create {total} pods: {time.monotonic() - start:.1f}")
            drained = wait_drained(ctl, args.timeout)
            print(f"seconds from the last pod until the work queue drained: {drained:.1f}")
            before = ctl.metrics()
            cpu_before = ctl.cpu_seconds()
            skips_before = ctl.metric(SKIPS)
            time.sleep(args.steady)
            after = ctl.metrics()
            cpu = ctl.cpu_seconds() - cpu_before
            skips = ctl.metric(SKIPS) - skips_before
            window = bench.histogram_delta(before, after, HISTOGRAM)
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
            print(f"settled jobs the resyncs skipped in the steady window: {skips:.0f}")
            per_reconcile = 1000 * cpu / max(1.0, reconciles)
            print(f"controller CPU ms per reconcile: {per_reconcile:.1f}")
            print(f"reconcile p50 ms: {1000 * p50:.1f}")
            print(f"reconcile p99 ms (target <= 50): {1000 * p99:.1f}")
            target = 250 if total <= 10_000 else 1024
            print(f"controller RSS MB with {total} pods (target <= {target}): {ctl.rss_mb():.0f}")
            print(f"API server RSS MB with {total} pods: {rss_mb(api_pid):.0f}")
            if args.restart:
                ctl = restart(cluster, tmp, kube, ctl, args.resync, args.jobs)
        finally:
            ctl.stop()


def restart(
    cluster: LocalCluster,
    tmp: Path,
    kube: Kube,
    ctl: bench.ControllerProcess,
    resync: str,
    jobs: int,
) -> bench.ControllerProcess:
    """Kill the controller, start another, report how long until it acts and what it sent."""
    ctl.process.kill()
    ctl.process.wait(30)
    started = time.monotonic()
    fresh = bench.ControllerProcess(
        cluster, tmp / "controller-restarted.log", "--workers", "4", "--resync-period", resync
    )
    kube.create(JOBS, "default", bench.job_body("scale-after-restart", 1))
    fresh.wait_ready(timeout=600)
    ready = time.monotonic() - started
    bench.wait_metric(fresh, "volcano_pod_creates_total", 1, timeout=600)
    acted = time.monotonic() - started
    sent = bench.requests_by_method(fresh.metrics())
    writes = sum(v for k, v in sent.items() if k in ("POST", "PUT", "PATCH", "DELETE"))
    print(f"restart: seconds until ready (caches listed): {ready:.1f}")
    print(f"restart: seconds until it acts again (target <= 30): {acted:.1f}")
    listed = ", ".join(f"{k} {v:.0f}" for k, v in sorted(sent.items()))
    print(f"restart: requests until then: {listed}")
    print(
        f"restart: writes until then: {writes:.0f} for {jobs} jobs already in place (the new "
        "Job's PodGroup, pod, status and Events among them)"
    )
    print(f"restart: controller RSS MB: {fresh.rss_mb():.0f}")
    return fresh


if __name__ == "__main__":
    main()
