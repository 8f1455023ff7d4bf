"""Controller pod-creation rate vs one client creating the same pods, on the real control plane.

    .venv/bin/python bench/controller.py [--jobs 200] [--pods-per-job 5] [--replicas 1000]
        [--nodes 12] [--webhook] [--volcano-controller PATH [--volcano-arg ARG ...]]
        [--only many-jobs|one-job] [--py-spy PREFIX]

Two scenarios, each in namespaces of its own on one control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler v1.34 and `--nodes` simulated nodes whose pods run once
bound): 200 Jobs of 5 pods (`many-jobs`) and one Job of 1 000 (`one-job`). For each:

1. the limit: one client creating the pods itself, one after another;
2. vcjob's controller: the Jobs are submitted first (through vcjob's webhook with `--webhook`),
   then a fresh controller starts and creates their PodGroups and pods;
3. with `--volcano-controller`, Volcano's own vc-controller-manager the same way.

Every contender is timed by one watch on its namespace, from the first pod seen to the last, so
the figures do not depend on what a contender says of itself. Between contenders the namespace
is deleted and its pods are gone, so each one starts on an idle API server. Prints one figure per
line: seconds, the ratio limit/contender (1.0 = as fast as one client; target >= 1.0), CPU
milliseconds per pod and peak RSS of each controller, the API server's CPU per pod, vcjob's API
calls per Job by method and, with `--webhook`, the Job create latency as the client and as
kube-apiserver (`apiserver_admission_webhook_admission_duration_seconds`) see it.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# This file is named like the `controller` package: keep its folder off the import path.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("_controllerbench", HERE / "_controllerbench.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["_controllerbench"] = bench  # its dataclasses look their module up
_spec.loader.exec_module(bench)

from kubeio.client import JOBS, PODS, Kube  # noqa: E402

TIMEOUT = 900.0
# After the last pod: the writes that follow it (status writes, Events, pods turning Running).
SETTLE = 2.0
WEBHOOK_HISTOGRAM = "apiserver_admission_webhook_admission_duration_seconds"


@dataclass(frozen=True)
class Run:
    seconds: float
    cpu_ms_per_pod: float | None = None
    peak_rss_mb: float | None = None
    server_cpu_ms_per_pod: float | None = None
    # What kube-apiserver served from the contender's start until 2 s after its last pod.
    requests: Any = None


def server_cpu(cluster: Any) -> float:
    return float(bench.process_cpu_seconds(cluster.component_pids()["kube-apiserver"]))


def plain_loop(cluster: Any, kube: Kube, namespace: str, total: int) -> Run:
    bench.ensure_namespace(kube, namespace)
    arrivals = bench.PodArrivals(kube, namespace, total)
    before, scrape = server_cpu(cluster), bench.apiserver_metrics(cluster)
    for i in range(total):
        kube.create(PODS, namespace, bench.pod_body(f"plain-{i}"))
    seconds = arrivals.wait(TIMEOUT)
    cpu = server_cpu(cluster) - before
    time.sleep(SETTLE)
    requests = bench.ServerRequests.between(scrape, bench.apiserver_metrics(cluster))
    return Run(seconds, server_cpu_ms_per_pod=1000 * cpu / total, requests=requests)


def submit(kube: Kube, namespace: str, label: str, jobs: int, replicas: int) -> list[float]:
    """Create the Jobs; returns each create's latency in seconds."""
    bench.ensure_namespace(kube, namespace)
    latencies = []
    for j in range(jobs):
        started = time.monotonic()
        kube.create(JOBS, namespace, bench.job_body(f"{label}-{j}", replicas))
        latencies.append(time.monotonic() - started)
    return latencies


def vcjob_controller(
    cluster: Any,
    kube: Kube,
    tmp: Path,
    namespace: str,
    total: int,
    jobs: int,
    profile: Path | None = None,
) -> tuple[Run, dict[str, float]]:
    arrivals = bench.PodArrivals(kube, namespace, total)
    scrape = bench.apiserver_metrics(cluster)
    ctl = bench.ControllerProcess(cluster, tmp / f"controller-{namespace}.log", "--workers", "4")
    try:
        ctl.wait_ready()
        profiler = bench.Profiler(ctl.process.pid, profile)
        cpu_before, server_before = ctl.cpu_seconds(), server_cpu(cluster)
        seconds = arrivals.wait(TIMEOUT)
        cpu, server = ctl.cpu_seconds() - cpu_before, server_cpu(cluster) - server_before
        profiler.stop()
        # Let the reconciles after the last pod (status writes, Events) finish before counting.
        time.sleep(SETTLE)
        calls = bench.requests_by_method(ctl.metrics())
        requests = bench.ServerRequests.between(scrape, bench.apiserver_metrics(cluster))
        peak = ctl.peak_rss_mb()
    finally:
        ctl.stop()
    run = Run(seconds, 1000 * cpu / total, peak, 1000 * server / total, requests)
    return run, {method: count / jobs for method, count in calls.items()}


def volcano_controller(
    cluster: Any, kube: Kube, tmp: Path, namespace: str, total: int, binary: str, extra: list[str]
) -> Run:
    arrivals = bench.PodArrivals(kube, namespace, total)
    scrape = bench.apiserver_metrics(cluster)
    ctl = bench.VolcanoControllerProcess(binary, cluster, tmp / f"volcano-{namespace}.log", extra)
    try:
        cpu_before, server_before = ctl.cpu_seconds(), server_cpu(cluster)
        seconds = arrivals.wait(TIMEOUT)
        cpu, server = ctl.cpu_seconds() - cpu_before, server_cpu(cluster) - server_before
        time.sleep(SETTLE)
        requests = bench.ServerRequests.between(scrape, bench.apiserver_metrics(cluster))
        peak = ctl.peak_rss_mb()
    finally:
        ctl.stop()
    return Run(seconds, 1000 * cpu / total, peak, 1000 * server / total, requests)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def scenario(
    label: str, cluster: Any, tmp: Path, kube: Kube, jobs: int, replicas: int, args: Any
) -> None:
    total = jobs * replicas
    plain = plain_loop(cluster, kube, f"plain-{label}", total)
    bench.delete_namespace(kube, f"plain-{label}")
    print(f"{label}: one client, seconds for {total} pods: {plain.seconds:.2f}")
    print(f"{label}: one client, API server CPU ms per pod: {plain.server_cpu_ms_per_pod:.2f}")
    server_lines(label, "one client", plain, jobs)

    contenders: list[tuple[str, Run]] = []
    before = bench.apiserver_metrics(cluster) if args.webhook else ""
    latencies = submit(kube, f"vcjob-{label}", label, jobs, replicas)
    if args.webhook:
        after = bench.apiserver_metrics(cluster)
        webhook_lines(label, latencies, before, after)
    profile = Path(f"{args.py_spy}-{label}.txt") if args.py_spy else None
    run, calls = vcjob_controller(cluster, kube, tmp, f"vcjob-{label}", total, jobs, profile)
    bench.delete_namespace(kube, f"vcjob-{label}")
    contenders.append(("vcjob", run))
    by_method = ", ".join(f"{m} {n:.1f}" for m, n in sorted(calls.items()))
    print(f"{label}: vcjob API calls per job: {sum(calls.values()):.1f} ({by_method})")

    if args.volcano_controller:
        submit(kube, f"volcano-{label}", label, jobs, replicas)
        run = volcano_controller(
            cluster, kube, tmp, f"volcano-{label}", total, args.volcano_controller, args.volcano_arg
        )
        bench.delete_namespace(kube, f"volcano-{label}")
        contenders.append(("volcano", run))

    for name, run in contenders:
        print(f"{label}: {name} seconds for {total} pods of {jobs} jobs: {run.seconds:.2f}")
        ratio = plain.seconds / run.seconds
        print(f"{label}: {name} ratio one-client/{name} (target >= 1.0): {ratio:.2f}")
        print(f"{label}: {name} CPU ms per pod: {run.cpu_ms_per_pod:.2f}")
        print(f"{label}: {name} peak RSS MB: {run.peak_rss_mb:.0f}")
        print(f"{label}: {name} API server CPU ms per pod: {run.server_cpu_ms_per_pod:.2f}")
        server_lines(label, name, run, jobs)


def server_lines(label: str, name: str, run: Run, jobs: int) -> None:
    """kube-apiserver's requests per Job by kind while `name` ran (every client's, the
    scheduler's bindings and the node agent's pod status writes included)."""
    if run.requests is None:
        return
    total = sum(run.requests.count.values()) / jobs
    print(f"{label}: {name} API server requests per job: {total:.2f}")
    for line in run.requests.lines(jobs, "job"):
        print(f"{label}: {name} API server   {line}")


def webhook_lines(label: str, latencies: list[float], before: str, after: str) -> None:
    """The create latency as the client saw it, and the webhook calls as kube-apiserver timed them
    (the histogram's growth over the submissions, mutating and validating calls together)."""
    window = bench.histogram_delta(before, after, WEBHOOK_HISTOGRAM)
    median, tail = 1000 * statistics.median(latencies), 1000 * quantile(latencies, 0.99)
    print(f"{label}: job create latency p50/p99 ms: {median:.1f} / {tail:.1f}")
    p50 = bench.histogram_quantile(window, WEBHOOK_HISTOGRAM, 0.50)
    p99 = bench.histogram_quantile(window, WEBHOOK_HISTOGRAM, 0.99)
    seen = f"{1000 * p50:.1f} / {1000 * p99:.1f}"
    print(f"{label}: webhook call as kube-apiserver sees it p50/p99 ms: {seen}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=1000, help="pods of the one-job scenario")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--pods-per-job", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=12, help="simulated nodes (0: none)")
    parser.add_argument("--webhook", action="store_true", help="submit through vcjob's webhook")
    parser.add_argument(
        "--volcano-controller", metavar="PATH", help="Volcano's vc-controller-manager"
    )
    parser.add_argument("--volcano-arg", action="append", default=[], help="one more flag for it")
    parser.add_argument("--only", choices=["one-job", "many-jobs"], help="run one scenario")
    parser.add_argument(
        "--py-spy",
        metavar="PREFIX",
        help="sample vcjob's controller with py-spy while it creates the pods "
        "(collapsed stacks in PREFIX-<scenario>.txt)",
    )
    args = parser.parse_args()
    print(f"machine: {bench.machine_line()}; nodes: {args.nodes}; webhook: {args.webhook}")
    with bench.control_plane(args.nodes, args.webhook) as (cluster, tmp, kube):
        if args.only in (None, "many-jobs"):
            scenario("many-jobs", cluster, tmp, kube, args.jobs, args.pods_per_job, args)
        if args.only in (None, "one-job"):
            scenario("one-job", cluster, tmp, kube, 1, args.replicas, args)


if __name__ == "__main__":
    main()
