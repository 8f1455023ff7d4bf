"""Controller pod-creation rate vs a plain client loop through the same local API server.

    .venv/bin/python bench/controller.py [--replicas 1000] [--jobs 200] [--pods-per-job 5]

Prints one figure per line: each scenario's seconds for the plain loop and for the controller,
the ratio (plain / controller: 1.0 = as fast as the physical limit; target ≥ 0.9), the
controller's CPU milliseconds per pod, the API server's in both phases, and the controller's API
calls per job by method (its start-up lists and watches included).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

# This file is named like the `controller` package: keep its folder off the import path.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("_controllerbench", HERE / "_controllerbench.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

from kubeio.client import JOBS, PODS, Kube, Resource  # noqa: E402
from kubeio.errors import AlreadyExistsError  # noqa: E402

ControllerProcess = bench.ControllerProcess
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
TIMEOUT = 600.0


def ensure_namespace(kube: Kube, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    with contextlib.suppress(AlreadyExistsError):
        kube.create(NAMESPACES, None, body)


def plain_loop(kube: Kube, namespace: str, names: list[str]) -> float:
    start = time.monotonic()
    for name in names:
        kube.create(PODS, namespace, bench.pod_body(name))
    return time.monotonic() - start


def server_cpu(cluster: Any) -> float:
    return float(bench.process_cpu_seconds(cluster.component_pids()["kube-apiserver"]))


def scenario(label: str, cluster: Any, tmp: Path, kube: Kube, jobs: int, replicas: int) -> None:
    """The plain loop creates the pods; then the jobs are submitted with no controller running,
    and a fresh controller is timed from ready (caches synced) to its last pod created."""
    plain_ns, ctl_ns = f"plain-{label}", f"ctl-{label}"
    ensure_namespace(kube, plain_ns)
    ensure_namespace(kube, ctl_ns)
    total = jobs * replicas
    names = [f"p{j}-worker-{i}" for j in range(jobs) for i in range(replicas)]
    server_before = server_cpu(cluster)
    plain = plain_loop(kube, plain_ns, names)
    plain_server = server_cpu(cluster) - server_before
    for j in range(jobs):
        kube.create(JOBS, ctl_ns, bench.job_body(f"{label}-{j}", replicas))
    ctl = ControllerProcess(cluster, tmp / f"controller-{label}.log", "--workers", "4")
    try:
        ctl.wait_ready()
        cpu_before, server_before = ctl.cpu_seconds(), server_cpu(cluster)
        elapsed = bench.wait_metric(ctl, "volcano_pod_creates_total", total, TIMEOUT)
        cpu, ctl_server = ctl.cpu_seconds() - cpu_before, server_cpu(cluster) - server_before
        # Let the reconciles after the last pod (status writes, Events) finish before counting.
        time.sleep(2.0)
        calls = bench.requests_by_method(ctl.metrics())
    finally:
        ctl.stop()
    print(f"{label}: plain loop seconds for {total} pods: {plain:.2f}")
    print(f"{label}: controller seconds for {total} pods of {jobs} jobs: {elapsed:.2f}")
    print(f"{label}: ratio plain/controller (target >= 0.9): {plain / elapsed:.2f}")
    print(f"{label}: controller CPU ms per pod: {1000 * cpu / total:.2f}")
    print(
        f"{label}: API server CPU ms per pod, plain loop / controller: "
        f"{1000 * plain_server / total:.2f} / {1000 * ctl_server / total:.2f}"
    )
    by_method = ", ".join(f"{m} {n / jobs:.1f}" for m, n in sorted(calls.items()))
    print(f"{label}: controller API calls per job: {sum(calls.values()) / jobs:.1f} ({by_method})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--pods-per-job", type=int, default=5)
    args = parser.parse_args()
    with bench.bare_cluster() as (cluster, tmp, kube):
        scenario("one-job", cluster, tmp, kube, 1, args.replicas)
        scenario("many-jobs", cluster, tmp, kube, args.jobs, args.pods_per_job)


if __name__ == "__main__":
    main()
