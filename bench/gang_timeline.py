"""Where a gang Job's time goes between its create and its last pod, per step, on the real
control plane.

    .venv/bin/python bench/gang_timeline.py [--jobs 200] [--pods-per-job 5] [--nodes 12]
        [--controller-arg ARG ...] [--py-spy FILE] [--requests]

vcjob's controller runs on a local control plane (kube-apiserver, etcd, kube-controller-manager,
`--nodes` simulated nodes and the node agent, which admits PodGroups as the gang scheduler does).
`--jobs` Jobs of `--pods-per-job` pods are created the way Volcano's users write them
(`schedulerName: volcano`, `minAvailable` = replicas, queue `default`) by four client threads at
once. One watch per kind (Jobs, PodGroups, pods) notes when each step of each Job is seen, so the
figures do not depend on what the controller says of itself:

- created → PodGroup: the Job's create answered → its PodGroup seen;
- PodGroup → admitted: the PodGroup seen → seen `Inqueue` (the node agent's part);
- admitted → first pod: seen `Inqueue` → the Job's first pod seen (the controller reacting);
- first → last pod: the Job's first pod → its last;
- all: the first create → the last pod of all.

Prints the median, p90 and max of each step per Job, the controller's CPU per pod and its peak
RSS, the commit and the command line. With `--requests`, kube-apiserver's audit log also says
what each client sent per Job (verb and resource), from the first create to the last pod.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
# This folder holds a `controller.py`: the package comes first, the folder's own modules after.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]

from _controllerbench import Profiler, process_cpu_seconds, status_mb  # noqa: E402

from kubeio.client import JOBS, PODGROUPS, PODS, Kube, Resource  # noqa: E402
from localcluster.running import (  # noqa: E402
    LocalCluster,
    running_cluster,
    tools_env,
    vcjob_executable,
)
from shared.labels import JOB_NAME_KEY  # noqa: E402

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NAMESPACE = "gang-timeline"
TIMEOUT = 900.0
CLIENTS = 4


def gang_job(name: str, replicas: int) -> dict[str, Any]:
    """A Job as Volcano's users submit it: the gang scheduler, the whole gang at once."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "queue": "default",
            "minAvailable": replicas,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "minAvailable": replicas,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "10m"}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


@dataclass
class JobSteps:
    """When each step of one Job was seen (monotonic seconds)."""

    created: float | None = None
    pod_group: float | None = None
    admitted: float | None = None
    pods: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class StepTimes:
    created_to_pod_group: list[float]
    pod_group_to_admitted: list[float]
    admitted_to_first_pod: list[float]
    first_to_last_pod: list[float]


def step_times(jobs: dict[str, JobSteps]) -> StepTimes:
    """Each step's duration for every Job that reached it."""
    made, admitted, first, spread = [], [], [], []
    for steps in jobs.values():
        if steps.created is not None and steps.pod_group is not None:
            made.append(steps.pod_group - steps.created)
        if steps.pod_group is not None and steps.admitted is not None:
            admitted.append(steps.admitted - steps.pod_group)
        if steps.admitted is not None and steps.pods:
            first.append(min(steps.pods) - steps.admitted)
        if steps.pods:
            spread.append(max(steps.pods) - min(steps.pods))
    return StepTimes(made, admitted, first, spread)


def summary(values: list[float]) -> str:
    """`median (p90, max)` in seconds."""
    if not values:
        return "none"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(ordered):.2f} s (p90 {p90:.2f}, max {ordered[-1]:.2f})"


class Timeline:
    """One watch per kind in the namespace, noting each Job's steps as they are seen."""

    def __init__(self, kube: Kube, expected_pods: int) -> None:
        self.jobs: dict[str, JobSteps] = {}
        self._lock = threading.Lock()
        self._expected = expected_pods
        self._pods_seen: set[str] = set()
        self.done = threading.Event()
        self._stop = threading.Event()
        self._responses: list[Any] = []
        for resource in (PODGROUPS, PODS):
            _, version = kube.list(resource, limit=1)
            threading.Thread(
                target=self._watch, args=(kube, resource, version), daemon=True
            ).start()

    def steps(self, job: str) -> JobSteps:
        with self._lock:
            return self.jobs.setdefault(job, JobSteps())

    def _watch(self, kube: Kube, resource: Resource, version: str) -> None:
        try:
            self._follow(kube, resource, version)
        except Exception:
            if not self._stop.is_set():
                raise  # stopping cuts the stream: only an earlier failure is news

    def _follow(self, kube: Kube, resource: Resource, version: str) -> None:
        while not self._stop.is_set():
            for event in kube.watch_path(
                resource.path(NAMESPACE),
                resource_version=version,
                timeout_seconds=900,
                on_open=self._responses.append,
            ):
                seen = time.monotonic()
                obj = event.get("object") or {}
                meta = obj.get("metadata") or {}
                version = str(meta.get("resourceVersion") or version)
                if event.get("type") not in ("ADDED", "MODIFIED"):
                    continue
                if resource is PODS:
                    self._pod(obj, seen)
                else:
                    self._pod_group(obj, seen)

    def _pod(self, pod: dict[str, Any], seen: float) -> None:
        meta = pod["metadata"]
        job = (meta.get("labels") or {}).get(JOB_NAME_KEY)
        if not job or meta["name"] in self._pods_seen:
            return
        self._pods_seen.add(meta["name"])
        self.steps(job).pods.append(seen)
        if len(self._pods_seen) >= self._expected:
            self.done.set()

    def _pod_group(self, group: dict[str, Any], seen: float) -> None:
        owners = group["metadata"].get("ownerReferences") or []
        job = next((o["name"] for o in owners if o.get("kind") == "Job"), None)
        if job is None:
            return
        steps = self.steps(job)
        if steps.pod_group is None:
            steps.pod_group = seen
        phase = (group.get("status") or {}).get("phase")
        if steps.admitted is None and phase in ("Inqueue", "Running"):
            steps.admitted = seen

    def stop(self) -> None:
        self._stop.set()
        for response in self._responses:
            with contextlib.suppress(Exception):
                response.shutdown()


def requests_per_job(audit_lines: Iterable[str], jobs: int) -> list[tuple[str, float]]:
    """`client verb resource[/subresource]` and how many of those requests kube-apiserver
    completed per Job, most first, from its audit log (JSON lines, one Event per request). The
    client is the user agent's program name (`vcjob-controller`, `kube-controller-manager`)."""
    counts: Counter[str] = Counter()
    for line in audit_lines:
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete":
            continue
        ref = event.get("objectRef") or {}
        resource = str(ref.get("resource") or event.get("requestURI", "?").split("?")[0])
        if ref.get("subresource"):
            resource += "/" + str(ref["subresource"])
        agent = str(event.get("userAgent") or "?").split("/")[0]
        counts[f"{agent} {event.get('verb')} {resource}"] += 1
    return [(key, count / jobs) for key, count in counts.most_common()]


@contextlib.contextmanager
def controller(cluster: LocalCluster, log: Path, extra: Sequence[str]) -> Iterator[int]:
    """vcjob's controller on the cluster; yields its pid once its caches have synced."""
    argv = [
        *vcjob_executable(), "controller", "--kubeconfig", str(cluster.kubeconfig),
        "--no-leader-elect", "--log-format", "text", "--log-level", "warning",
        "--health-port", "0", "--metrics-port", "0", "--bind-address", "127.0.0.1", *extra,
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=tools_env())
    try:
        wait_ready(process, log)
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def wait_ready(process: subprocess.Popen[bytes], log: Path, timeout: float = 120.0) -> None:
    """Until the controller's /readyz answers 200 (its caches synced)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the controller exited:\n{log.read_text(errors='replace')}")
        found = re.search(r"health port (\d+)", log.read_text(errors="replace"))
        if found:
            with contextlib.suppress(OSError):
                url = f"http://127.0.0.1:{found.group(1)}/readyz"
                with urllib.request.urlopen(url, timeout=5) as answer:
                    if answer.status == 200:
                        return
        time.sleep(0.1)
    raise SystemExit(f"the controller was not ready after {timeout:.0f}s; see {log}")


def commit() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head + ("+dirty" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--pods-per-job", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=12)
    parser.add_argument("--controller-arg", action="append", default=[])
    parser.add_argument("--py-spy", metavar="FILE", help="py-spy's collapsed stacks go here")
    parser.add_argument(
        "--requests", action="store_true", help="requests per Job by client, from the audit log"
    )
    args = parser.parse_args()
    print(f"commit {commit()}; command: {' '.join(sys.argv)}")
    total = args.jobs * args.pods_per_job
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_cluster(
            Path(tmp) / "cluster",
            nodes=args.nodes,
            pod_runtime="1h",
            webhook=False,
            controller=False,
            extra_args=["--audit-log", str(Path(tmp) / "audit.log")] if args.requests else (),
        ) as cluster,
    ):
        kube = Kube(cluster.api_client(), qps=0)
        kube.create(NAMESPACES, None, {"metadata": {"name": NAMESPACE}})
        log = Path(tmp) / "controller.log"
        with controller(cluster, log, args.controller_arg) as pid:
            timeline = Timeline(kube, total)
            # Stopped with SIGINT, py-spy writes its file (SIGTERM lost it).
            spy = Profiler(pid, Path(args.py_spy).resolve() if args.py_spy else None)
            cpu_before = process_cpu_seconds(pid)
            audit = Path(tmp) / "audit.log"
            audit_start = audit.stat().st_size if args.requests else 0
            started = time.monotonic()

            def create(index: int) -> None:
                name = f"gang-{index}"
                kube.create(JOBS, NAMESPACE, gang_job(name, args.pods_per_job))
                timeline.steps(name).created = time.monotonic()

            with ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(create, range(args.jobs)))
            submitted = time.monotonic() - started
            if not timeline.done.wait(TIMEOUT):
                raise SystemExit(f"not every pod after {TIMEOUT:.0f}s; see {log}")
            last = max(max(s.pods) for s in timeline.jobs.values() if s.pods)
            cpu = process_cpu_seconds(pid) - cpu_before
            rss = status_mb(pid, "VmHWM")
            spy.stop()
            timeline.stop()
            if args.requests:
                with audit.open() as lines:
                    lines.seek(audit_start)
                    sent = requests_per_job(lines, args.jobs)
    steps = step_times(timeline.jobs)
    print(f"{args.jobs} jobs x {args.pods_per_job} pods, submitted in {submitted:.2f} s")
    print(f"created -> PodGroup:    {summary(steps.created_to_pod_group)}")
    print(f"PodGroup -> admitted:   {summary(steps.pod_group_to_admitted)}")
    print(f"admitted -> first pod:  {summary(steps.admitted_to_first_pod)}")
    print(f"first -> last pod:      {summary(steps.first_to_last_pod)}")
    print(f"all: {last - started:.2f} s ({total / (last - started):.1f} pods/s)")
    print(f"controller CPU per pod: {1000 * cpu / total:.2f} ms; peak RSS {rss:.0f} MB")
    if args.requests:
        print("requests per Job (client verb resource), from the first create to the last pod:")
        for key, per_job in sent:
            if per_job >= 0.05:
                print(f"  {per_job:6.2f}  {key}")


if __name__ == "__main__":
    main()
