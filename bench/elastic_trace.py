"""What the elastic autoscaler buys: one trace replayed with it off and on.

    .venv/bin/python bench/elastic_trace.py [--trace bench/traces/philly-60-medium.json]

Each run starts a fresh local cluster (`vcjob local up`: API server, webhook, controller and the
simulator with 4 nodes x 8 GPUs), submits the trace's jobs at their times and waits until all
have completed. Rigid jobs run their scaled duration (`sim.vcjob.io/runtime`); elastic jobs train
by work (`sim.vcjob.io/work`, localcluster/simulator/work.py): more workers finish sooner
(n^0.9), every resize costs the job's own restart pause (`sim.vcjob.io/resize-pause`, from the
trace). Off, the controller runs with VCJOB_CONTROLLER_ELASTIC=false, so every job stays at its
`replicas`.

A job's completion time runs from the moment its create call returns to the moment a watch on Jobs
sees it Completed (or Failed, ...); every half second a sample counts the GPUs of Running pods and
the jobs waiting to start.

Prints one figure per line (bench/elastic_figures.py) and writes the record of both runs to
docs/elastic-trace-run.json; `bench/elastic_plot.py --trace` draws docs/elastic-trace.png from it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# bench/controller.py is named like the `controller` package: this folder goes last on the import
# path, behind the packages, and its helper modules are imported plainly.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]

import elastic_figures as figures_module  # noqa: E402
import philly_trace  # noqa: E402

TraceJob = philly_trace.TraceJob

from localcluster.running import running_cluster  # noqa: E402
from localcluster.simulator.client import (  # noqa: E402
    EVENTS,
    PODS,
    ApiError,
    KubeClient,
    Resource,
    WatchExpiredError,
)

JOBS = Resource("batch.volcano.sh", "v1alpha1", "jobs", namespaced=True)
NAMESPACE = "default"
NODES, GPUS_PER_NODE = 4, 8
GPU = "nvidia.com/gpu"
SAMPLE_PERIOD = 0.5
RECORD = Path(__file__).resolve().parent.parent / "docs" / "elastic-trace-run.json"
#: The headline trace: 81 % of the GPUs on average, so that some jobs wait in the bursts.
MEDIUM_TRACE = philly_trace.TRACE.with_name("philly-60-medium.json")
FINISHED = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
#: A job Pending longer than this waits for GPUs; before, it may just be starting (the controller
#: creates its pods, the scheduler binds them, the kubelet starts them 0.5 s later).
START_GRACE = 3.0


def job_body(job: TraceJob) -> dict[str, Any]:
    """The trace job as a Volcano Job: one worker pod per GPU, training by work if elastic."""
    gpus = job["gpus"]
    script = (
        {
            "sim.vcjob.io/work": str(job["work"]),
            "sim.vcjob.io/resize-pause": f"{job['resize_pause']}s",
        }
        if job["elastic"]
        else {"sim.vcjob.io/runtime": f"{job['seconds']}s"}
    )
    worker: dict[str, Any] = {
        "name": "worker",
        "replicas": gpus,
        "minAvailable": gpus,
        "template": {
            "metadata": {"annotations": script},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "trainer",
                        "image": "busybox",
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "256Mi", GPU: "1"},
                            "limits": {"cpu": "100m", "memory": "256Mi", GPU: "1"},
                        },
                    }
                ],
            },
        },
    }
    if job["elastic"]:
        worker["minReplicas"], worker["maxReplicas"] = gpus, job["max_replicas"]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": job["name"], "namespace": NAMESPACE},
        "spec": {"schedulerName": "volcano", "minAvailable": gpus, "tasks": [worker]},
    }


def _phase(job: dict[str, Any]) -> str | None:
    phase = ((job.get("status") or {}).get("state") or {}).get("phase")
    return str(phase) if phase else None


def _running_gpus(pods: list[dict[str, Any]]) -> int:
    total = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") != "Running":
            continue
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            limits = (container.get("resources") or {}).get("limits") or {}
            total += int(limits.get(GPU, 0))
    return total


class Replay:
    """Submits the trace's jobs on time, watches them finish, samples the GPUs every half second."""

    def __init__(self, client: KubeClient, watch_client: KubeClient, trace: list[TraceJob]) -> None:
        self._client = client
        self._watch_client = watch_client
        self._trace = trace
        self.start = time.monotonic()
        self.jobs: dict[str, figures_module.JobRecord] = {}
        self.samples: list[figures_module.Sample] = []
        self._finished: dict[str, float] = {}  # by the watch, the moment the phase turned
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def now(self) -> float:
        return round(time.monotonic() - self.start, 2)

    def submit_all(self) -> None:
        for job in self._trace:
            delay = job["submit"] - (time.monotonic() - self.start)
            if delay > 0 and self._stop.wait(delay):
                return
            self._client.create(JOBS, job_body(job), NAMESPACE)
            with self._lock:
                self.jobs[job["name"]] = {"submit": self.now(), "finish": None}

    def _saw(self, job: dict[str, Any]) -> None:
        name = str((job.get("metadata") or {}).get("name") or "")
        if _phase(job) in FINISHED:
            with self._lock:
                self._finished.setdefault(name, self.now())

    def watch_jobs(self) -> None:
        """Records the moment each job's phase turns final (a relist after a 410 Gone)."""
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    listing = self._watch_client.list(JOBS, NAMESPACE)
                    for job in listing["items"]:
                        self._saw(job)
                    version = str(listing["metadata"]["resourceVersion"])
                for event in self._watch_client.watch(
                    JOBS, version, namespace=NAMESPACE, timeout_seconds=30
                ):
                    job = event.get("object") or {}
                    version = str((job.get("metadata") or {}).get("resourceVersion") or version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._saw(job)
                    if self._stop.is_set():
                        return
            except WatchExpiredError:
                version = ""
            except ApiError:
                self._stop.wait(0.2)

    def sample(self) -> bool:
        """One sample; True once every job of the trace has finished."""
        t = self.now()
        jobs = self._client.list(JOBS, NAMESPACE)["items"]
        pods = self._client.list(PODS, NAMESPACE)["items"]
        phases = {job["metadata"]["name"]: _phase(job) for job in jobs}
        waiting = 0
        with self._lock:
            for name, record in self.jobs.items():
                if record["finish"] is None and name in self._finished:
                    record["finish"] = self._finished[name]
                phase = phases.get(name)
                if phase in (None, "Pending") and t - record["submit"] > START_GRACE:
                    waiting += 1
            done = sum(record["finish"] is not None for record in self.jobs.values())
        self.samples.append({"t": t, "gpus_in_use": _running_gpus(pods), "waiting": waiting})
        return done == len(self._trace)

    def run(self, timeout: float) -> None:
        watcher = threading.Thread(target=self.watch_jobs, name="watcher", daemon=True)
        watcher.start()
        submitter = threading.Thread(target=self.submit_all, name="submitter", daemon=True)
        submitter.start()
        deadline = time.monotonic() + timeout
        try:
            while not self.sample():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the trace did not finish in {timeout:.0f} s")
                time.sleep(SAMPLE_PERIOD)
        finally:
            self._stop.set()
            submitter.join(5)

    def resizes(self) -> int:
        events = self._client.list(EVENTS, NAMESPACE)["items"]
        return sum(
            int(event.get("count") or 1)
            for event in events
            if event.get("reason") == "Scaled"
            and (event.get("source") or {}).get("component") == "vcjob-elastic"
        )


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """The controller that `vcjob local up` starts reads its flags from VCJOB_CONTROLLER_*."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def replay(
    trace: list[TraceJob],
    elastic: bool,
    period: str,
    max_step: int,
    min_growth: float,
    resize_cooldown: str,
    timeout: float,
) -> figures_module.Run:
    env = {
        "VCJOB_CONTROLLER_ELASTIC": "true" if elastic else "false",
        "VCJOB_CONTROLLER_ELASTIC_MAX_STEP": str(max_step),
        "VCJOB_CONTROLLER_ELASTIC_MIN_GROWTH": str(min_growth),
        "VCJOB_CONTROLLER_ELASTIC_RESIZE_COOLDOWN": resize_cooldown,
    }
    with (
        _environment(env),
        tempfile.TemporaryDirectory() as tmp,
        running_cluster(
            Path(tmp) / "cluster",
            simulator=True,
            webhook=True,
            controller=True,
            nodes=NODES,
            node_gpu=GPUS_PER_NODE,
            pod_runtime="10m",
            extra_args=["--elastic-period", period],
        ) as cluster,
    ):
        recorder = Replay(cluster.rest_client(), cluster.rest_client(), trace)
        recorder.run(timeout)
        return {
            "gpus": NODES * GPUS_PER_NODE,
            "jobs": recorder.jobs,
            "samples": recorder.samples,
            "resizes": recorder.resizes(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=MEDIUM_TRACE)
    parser.add_argument("--period", default="1s", help="the autoscaler's round period")
    parser.add_argument("--max-step", type=int, default=1, help="--elastic-max-step")
    parser.add_argument("--min-growth", type=float, default=0.0, help="--elastic-min-growth")
    parser.add_argument("--resize-cooldown", default="0s", help="--elastic-resize-cooldown")
    parser.add_argument(
        "--off-from",
        type=Path,
        help="take the autoscaler-off run from this earlier record instead of replaying it "
        "(it does not depend on the autoscaler's settings; saves half the time when tuning)",
    )
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per run")
    parser.add_argument("--record", type=Path, default=RECORD)
    args = parser.parse_args()
    trace: list[TraceJob] = json.loads(args.trace.read_text())
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if args.off_from is not None:
        off = json.loads(args.off_from.read_text())["off"]
    else:
        off = replay(trace, False, args.period, 1, 0.0, "0s", args.timeout)
    on = replay(
        trace,
        True,
        args.period,
        args.max_step,
        args.min_growth,
        args.resize_cooldown,
        args.timeout,
    )
    for label, value in figures_module.figures(on, off):
        print(f"{label}: {value}")
    args.record.write_text(
        json.dumps(
            {
                "trace": args.trace.name,
                "date": started,
                "period": args.period,
                "max_step": args.max_step,
                "min_growth": args.min_growth,
                "resize_cooldown": args.resize_cooldown,
                "off_from": args.off_from.name if args.off_from else None,
                "on": on,
                "off": off,
            },
            indent=None,
        )
        + "\n"
    )
    print(f"wrote {args.record}")


if __name__ == "__main__":
    main()
