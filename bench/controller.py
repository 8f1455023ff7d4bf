"""Controller pod-creation rate vs N clients creating the same pods, on the real control plane.

    .venv/bin/python bench/controller.py [--path gang|default] [--settings production|
        unthrottled|both] [--runs 3] [--clients 4] [--jobs 200] [--pods-per-job 5]
        [--replicas 1000] [--nodes 12] [--webhook] [--only many-jobs|one-job]
        [--volcano-controller PATH [--volcano-arg ARG ...]] [--py-spy PREFIX]

Two scenarios on one control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler v1.34 and `--nodes` simulated nodes whose pods run once bound): 200 Jobs of 5 pods
(`many-jobs`) and one Job of 1 000 (`one-job`). The path (`--path`):

- `gang` (default), Volcano's: Jobs of scheduler `volcano`, every task's minAvailable its
  replicas, queue `default`; the local cluster's node agent admits the PodGroups (Inqueue) and
  binds the pods, the same gang admission for every contender, which creates the pods only
  once their PodGroup is admitted;
- `default`: Jobs of `default-scheduler` with minAvailable 1, pods created at once and bound by
  kube-scheduler.

Contenders, each in a fresh namespace deleted (its pods gone) before the next one starts:

1. the limit: `--clients` threads creating the same pods themselves, each its own client;
2. vcjob's controller, per settings profile: the Jobs are submitted first (through vcjob's
   webhook with `--webhook`), then a fresh controller creates their PodGroups and pods;
3. with `--volcano-controller`, Volcano's vc-controller-manager the same way, per profile.

Profiles (`--settings`, default both): `production`, vcjob with its Helm chart's default workers,
qps and burst and Volcano with its own defaults; `unthrottled`, no client-side rate limit for
either. Volcano's `--worker-threads` is always vcjob's `--workers`. `--runs` rounds, the
contenders' order reversed every other round (ABBA). Every contender is timed by one watch on its
namespace, from the first pod seen to the last. Printed per contender and figure: the median and
range over the runs.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

# bench/controller.py is named like the `controller` package: this folder goes last on the import
# path, behind the packages, and its helper modules are imported plainly.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]

import _controllerbench as bench  # noqa: E402

from kubeio.client import JOBS, PODS, Kube  # noqa: E402
from localcluster.running import LocalCluster  # noqa: E402

ROOT = HERE.parent
CHART_VALUES = ROOT / "charts" / "vcjob" / "values.yaml"
TIMEOUT = 900.0
# After the last pod: the writes that follow it (status writes, Events, pods turning Running).
SETTLE = 2.0
WEBHOOK_HISTOGRAM = "apiserver_admission_webhook_admission_duration_seconds"
PATH_LABELS = {"gang": "gang", "default": "default-scheduler"}

Kind = Literal["limit", "vcjob", "volcano"]


@dataclass(frozen=True)
class Contender:
    kind: Kind
    profile: bench.Profile | None = None
    flags: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.kind if self.profile is None else f"{self.kind} {self.profile}"

    @property
    def slug(self) -> str:
        return self.name.replace(" ", "-")


@dataclass(frozen=True)
class Run:
    seconds: float  # first pod seen to the last
    start_to_last: float  # contender started (controller spawned, clients begun) to the last pod
    server_cpu_ms_per_pod: float
    # What kube-apiserver served from the contender's start until SETTLE after its last pod.
    requests: bench.ServerRequests
    # The contender's own API calls per Job by method (None where it does not count them).
    calls_per_job: dict[str, float] | None = None
    cpu_ms_per_pod: float | None = None
    peak_rss_mb: float | None = None
    # The Job controller's reconciles per Job (vcjob's only).
    reconciles_per_job: float | None = None


@dataclass
class Scenario:
    name: str  # many-jobs or one-job: in namespace and Job names
    label: str  # the path and the name: what its figures are printed under
    jobs: int
    replicas: int
    gang: bool
    scheduler: str
    latencies: list[float] = field(default_factory=list)
    webhook_windows: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.jobs * self.replicas


def server_cpu(cluster: LocalCluster) -> float:
    return bench.process_cpu_seconds(cluster.component_pids()["kube-apiserver"])


def run_limit(cluster: LocalCluster, kube: Kube, namespace: str, sc: Scenario, clients: int) -> Run:
    """`clients` threads, each with a client of its own, create the pods round-robin."""
    bench.ensure_namespace(kube, namespace)
    kubes = [Kube(cluster.api_client(), qps=0) for _ in range(clients)]
    arrivals = bench.PodArrivals(kube, namespace, sc.total)
    before, scrape = server_cpu(cluster), bench.apiserver_metrics(cluster)

    def create(index: int) -> None:
        for i in range(index, sc.total, clients):
            kubes[index].create(PODS, namespace, bench.pod_body(f"limit-{i}", sc.scheduler))

    started = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(create, n) for n in range(clients)]:
            future.result()
    seconds = arrivals.wait(TIMEOUT)
    cpu = server_cpu(cluster) - before
    time.sleep(SETTLE)
    requests = bench.ServerRequests.between(scrape, bench.apiserver_metrics(cluster))
    calls = {"POST": sc.total / sc.jobs}
    last = arrivals.times[-1] - started
    return Run(seconds, last, 1000 * cpu / sc.total, requests, calls)


def submit(cluster: LocalCluster, kube: Kube, namespace: str, sc: Scenario, webhook: bool) -> None:
    """Create the Jobs one after another; with the webhook, note each create's latency and the
    webhook calls kube-apiserver timed meanwhile."""
    bench.ensure_namespace(kube, namespace)
    before = bench.apiserver_metrics(cluster) if webhook else ""
    for j in range(sc.jobs):
        started = time.monotonic()
        kube.create(JOBS, namespace, bench.job_body(f"{sc.name}-{j}", sc.replicas, gang=sc.gang))
        sc.latencies.append(time.monotonic() - started)
    if webhook:
        after = bench.apiserver_metrics(cluster)
        sc.webhook_windows.append(bench.histogram_delta(before, after, WEBHOOK_HISTOGRAM))


def run_vcjob(
    cluster: LocalCluster,
    kube: Kube,
    tmp: Path,
    namespace: str,
    sc: Scenario,
    flags: Sequence[str],
    profile: Path | None,
) -> Run:
    arrivals = bench.PodArrivals(kube, namespace, sc.total)
    scrape = bench.apiserver_metrics(cluster)
    started = time.monotonic()
    ctl = bench.ControllerProcess(cluster, tmp / f"controller-{namespace}.log", *flags)
    try:
        ctl.wait_ready()
        # From ready on: the interpreter's start-up is not the pods' cost.
        cpu_before, server_before = ctl.cpu_seconds(), server_cpu(cluster)
        profiler = bench.Profiler(ctl.process.pid, profile)
        seconds = arrivals.wait(TIMEOUT)
        cpu, server = ctl.cpu_seconds() - cpu_before, server_cpu(cluster) - server_before
        profiler.stop()
        # Let the reconciles after the last pod (status writes, Events) finish before counting.
        time.sleep(SETTLE)
        metrics = ctl.metrics()
        calls = bench.requests_by_method(metrics)
        reconciles = bench.job_reconciles(metrics)
        requests = bench.ServerRequests.between(scrape, bench.apiserver_metrics(cluster))
        peak = ctl.peak_rss_mb()
    finally:
        ctl.stop()
    per_job = {method: count / sc.jobs for method, count in calls.items()}
    last = arrivals.times[-1] - started
    return Run(
        seconds,
        last,
        1000 * server / sc.total,
        requests,
        per_job,
        1000 * cpu / sc.total,
        peak,
        reconciles / sc.jobs,
    )


def run_volcano(
    cluster: LocalCluster,
    kube: Kube,
    tmp: Path,
    namespace: str,
    sc: Scenario,
    binary: str,
    flags: Sequence[str],
) -> Run:
    arrivals = bench.PodArrivals(kube, namespace, sc.total)
    scrape = bench.apiserver_metrics(cluster)
    started = time.monotonic()
    ctl = bench.VolcanoControllerProcess(binary, cluster, tmp / f"volcano-{namespace}.log", flags)
    try:
        cpu_before, server_before = ctl.cpu_seconds(), server_cpu(cluster)
        seconds = arrivals.wait(TIMEOUT)
        cpu, server = ctl.cpu_seconds() - cpu_before, server_cpu(cluster) - server_before
        time.sleep(SETTLE)
        requests = bench.ServerRequests.between(scrape, bench.apiserver_metrics(cluster))
        peak = ctl.peak_rss_mb()
    finally:
        ctl.stop()
    last = arrivals.times[-1] - started
    return Run(seconds, last, 1000 * server / sc.total, requests, None, 1000 * cpu / sc.total, peak)


def contenders_of(args: argparse.Namespace) -> list[Contender]:
    """The limit, then vcjob and Volcano in each profile (`--volcano-arg` after the profile's
    flags, so that it wins)."""
    chart = bench.read_chart_settings(CHART_VALUES)
    chosen = bench.profiles_of(args.settings)
    out = [Contender("limit")]
    out += [Contender("vcjob", p, tuple(bench.vcjob_flags(p, chart))) for p in chosen]
    if args.volcano_controller:
        out += [
            Contender("volcano", p, (*bench.volcano_flags(p, chart.workers), *args.volcano_arg))
            for p in chosen
        ]
    return out


def scenario(
    sc: Scenario,
    cluster: LocalCluster,
    tmp: Path,
    kube: Kube,
    contenders: Sequence[Contender],
    args: argparse.Namespace,
) -> None:
    runs: dict[str, list[Run]] = {c.name: [] for c in contenders}
    for r in range(args.runs):
        for c in bench.abba(contenders, r):
            namespace = f"{c.slug}-{sc.name}-r{r}"
            run = one_run(sc, cluster, tmp, kube, c, namespace, r, args)
            bench.delete_namespace(kube, namespace)
            runs[c.name].append(run)
            print(
                f"{sc.label}: round {r + 1}/{args.runs} {c.name}: {run.seconds:.2f} s", flush=True
            )
    summary_lines(sc, contenders, runs)
    if args.webhook:
        webhook_lines(sc)


def one_run(
    sc: Scenario,
    cluster: LocalCluster,
    tmp: Path,
    kube: Kube,
    c: Contender,
    namespace: str,
    round_index: int,
    args: argparse.Namespace,
) -> Run:
    if c.kind == "limit":
        return run_limit(cluster, kube, namespace, sc, args.clients)
    submit(cluster, kube, namespace, sc, args.webhook)
    if c.kind == "vcjob":
        profile = (
            Path(f"{args.py_spy}-{sc.name}-{c.slug}-r{round_index}.txt") if args.py_spy else None
        )
        return run_vcjob(cluster, kube, tmp, namespace, sc, c.flags, profile)
    return run_volcano(cluster, kube, tmp, namespace, sc, args.volcano_controller, c.flags)


def present(runs: Sequence[Run], read: Callable[[Run], float | None]) -> list[float]:
    """One figure of every run that has it."""
    return [v for v in map(read, runs) if v is not None]


def figure(label: str, name: str, what: str, values: Sequence[float], digits: int = 2) -> None:
    summary = bench.spread(values)
    if summary is not None:
        print(f"{label}: {name} {what}: {summary.render(digits)}")


def summary_lines(
    sc: Scenario, contenders: Sequence[Contender], runs: dict[str, list[Run]]
) -> None:
    label, total = sc.label, sc.total
    limit = [run.seconds for run in runs["limit"]]
    print(f"{label}: {total} pods of {sc.jobs} jobs; median (min-max) over {len(limit)} runs")
    for c in contenders:
        own, name = runs[c.name], c.name
        seconds = [run.seconds for run in own]
        print(f"{label}: {name} flags: {shlex.join(c.flags) or '-'}")
        figure(label, name, "seconds first to last pod", seconds)
        figure(
            label, name, "seconds start to last pod", present(own, lambda run: run.start_to_last)
        )
        figure(label, name, "pods/s", [total / s for s in seconds if s > 0], 0)
        if c.kind != "limit":
            figure(
                label, name, "rate ratio to the limit (target >= 1.0)", bench.ratios(limit, seconds)
            )
        if c.kind == "vcjob":
            volcano = runs.get(f"volcano {c.profile}")
            if volcano:
                ratio = bench.ratios([run.seconds for run in volcano], seconds)
                figure(label, name, "rate ratio vcjob/volcano", ratio)
        figure(
            label, name, "controller CPU ms per pod", present(own, lambda run: run.cpu_ms_per_pod)
        )
        figure(label, name, "peak RSS MB", present(own, lambda run: run.peak_rss_mb), 0)
        figure(
            label,
            name,
            "API server CPU ms per pod",
            present(own, lambda run: run.server_cpu_ms_per_pod),
        )
        reconciles = [run.reconciles_per_job for run in own if run.reconciles_per_job is not None]
        if reconciles:
            figure(label, name, "reconciles per job", reconciles, 1)
        calls_lines(label, name, own, sc.jobs)


def calls_lines(label: str, name: str, runs: list[Run], jobs: int) -> None:
    """The contender's own API calls per Job (by method), then what kube-apiserver served per Job
    while it ran, by kind (every client's: the scheduler's bindings and the node agent's writes
    included, so contenders differ by what each causes); medians over the runs."""
    own = [run.calls_per_job for run in runs if run.calls_per_job is not None]
    if own:
        methods = sorted({m for calls in own for m in calls})
        by_method = ", ".join(
            f"{m} {statistics.median([calls.get(m, 0.0) for calls in own]):.1f}" for m in methods
        )
        figure(label, name, f"API calls per job ({by_method})", [sum(c.values()) for c in own], 1)
    else:
        print(f"{label}: {name} API calls per job: not counted (see the API server's)")
    served = [sum(run.requests.count.values()) / jobs for run in runs]
    figure(label, name, "API server requests per job, all clients", served)
    kinds = sorted(
        {k for run in runs for k in run.requests.count},
        key=lambda k: -statistics.median([run.requests.count.get(k, 0.0) for run in runs]),
    )
    for kind in kinds:
        counts = [run.requests.count.get(kind, 0.0) / jobs for run in runs]
        ms = [1000 * run.requests.seconds.get(kind, 0.0) / jobs for run in runs]
        per = f"{statistics.median(counts):.2f} per job, {statistics.median(ms):.2f} ms per job"
        print(f"{label}: {name} API server   {kind}: {per}")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def webhook_lines(sc: Scenario) -> None:
    """The create latency as the client saw it over every submission, and the webhook calls as
    kube-apiserver timed them (the histogram's growth over the submissions, merged)."""
    if not sc.latencies:
        return
    median, tail = 1000 * statistics.median(sc.latencies), 1000 * quantile(sc.latencies, 0.99)
    print(f"{sc.label}: job create latency p50/p99 ms: {median:.1f} / {tail:.1f}")
    merged = bench.histogram_delta("", "\n".join(sc.webhook_windows), WEBHOOK_HISTOGRAM)
    p50 = bench.histogram_quantile(merged, WEBHOOK_HISTOGRAM, 0.50)
    p99 = bench.histogram_quantile(merged, WEBHOOK_HISTOGRAM, 0.99)
    seen = f"{1000 * p50:.1f} / {1000 * p99:.1f}"
    print(f"{sc.label}: webhook call as kube-apiserver sees it p50/p99 ms: {seen}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--path",
        choices=["gang", "default"],
        default="gang",
        help="gang: scheduler volcano, gangs admitted by the node agent (default); "
        "default: default-scheduler, minAvailable 1",
    )
    parser.add_argument(
        "--settings",
        choices=["production", "unthrottled", "both"],
        default="both",
        help="production: the chart's workers/qps/burst for vcjob, Volcano's own defaults; "
        "unthrottled: no client rate limit for either (default: both)",
    )
    parser.add_argument("--runs", type=int, default=3, help="rounds of every contender")
    parser.add_argument("--clients", type=int, default=4, help="threads of the limit")
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
        "(collapsed stacks in PREFIX-<scenario>-<contender>-r<round>.txt)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.clients < 1:
        parser.error("--runs and --clients must be at least 1")
    return args


def scenarios_of(args: argparse.Namespace) -> list[Scenario]:
    gang = args.path == "gang"
    scheduler = bench.scheduler_of(args.path)
    shapes = [("many-jobs", args.jobs, args.pods_per_job), ("one-job", 1, args.replicas)]
    return [
        Scenario(name, f"{PATH_LABELS[args.path]}/{name}", jobs, replicas, gang, scheduler)
        for name, jobs, replicas in shapes
        if args.only in (None, name)
    ]


def main() -> None:
    args = parse_args()
    scenarios = scenarios_of(args)
    for sc in scenarios:
        problem = bench.gang_capacity_problem(args.path, args.nodes, sc.total)
        if problem:
            sys.exit(f"{sc.label}: {problem}")
    contenders = contenders_of(args)
    print(f"commit: {bench.git_revision(ROOT)}")
    print(f"command: {shlex.join(sys.orig_argv)}")
    print(f"machine: {bench.machine_line()}; nodes: {args.nodes}; webhook: {args.webhook}")
    print(f"path: {PATH_LABELS[args.path]}; runs: {args.runs}; limit clients: {args.clients}")
    with bench.control_plane(args.nodes, args.webhook) as (cluster, tmp, kube):
        for sc in scenarios:
            scenario(sc, cluster, tmp, kube, contenders, args)


if __name__ == "__main__":
    main()
