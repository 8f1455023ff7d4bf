"""Prometheus metrics of one controller instance (controller-runtime names; no job labels).

Beside the reconcile and workqueue series, what controller-runtime users expect to find: the
`process_*` collector, `rest_client_requests_total{code,method,host}` (every API request the
controller makes) and the in-flight workqueue gauges `workqueue_unfinished_work_seconds` and
`workqueue_longest_running_processor_seconds`. No `_created` series are exported.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controller.volcanometrics import (
    JOB_TO_POD_BUCKETS,
    JOB_TO_POD_HELP,
    JOB_TO_POD_LATENCY,
    JobPhaseCounters,
)
from kubeio.workqueue import QueueHooks

CONTROLLER = "job"
RECONCILE_BUCKETS: tuple[float, ...] = (
    *(0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075),
    *(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


class InFlightWork(Collector):
    """The keys workers hold right now, as the two gauges client-go's workqueue exports.

    The queue reports a key taken (`queued_for`, called as a worker starts on it) and a key done
    (`worked_for`, with how long it was held); the start times in between are kept here.
    """

    def __init__(self, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._name = name
        self._clock = clock
        self._lock = threading.Lock()
        self._started: list[float] = []

    def started(self, _waited: float) -> None:
        with self._lock:
            self._started.append(self._clock())

    def finished(self, held: float) -> None:
        with self._lock:
            if not self._started:
                return
            began = self._clock() - held
            self._started.remove(min(self._started, key=lambda s: abs(s - began)))

    def ages(self) -> list[float]:
        now = self._clock()
        with self._lock:
            return [max(0.0, now - s) for s in self._started]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ages = self.ages()
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "Seconds of work in progress not yet observed by work_duration; large values "
            "indicate stuck workers.",
            labels=["name"],
        )
        unfinished.add_metric([self._name], sum(ages))
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "Seconds the longest-running worker has held its key.",
            labels=["name"],
        )
        longest.add_metric([self._name], max(ages, default=0.0))
        yield unfinished
        yield longest


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        # `_created` series double every counter and histogram and no dashboard reads them.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry or CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)
        self.in_flight = InFlightWork(CONTROLLER)
        r.register(self.in_flight)
        self.rest_requests = Counter(
            "rest_client_requests_total",
            "API server requests by status code, method and host.",
            ["code", "method", "host"],
            registry=r,
        )
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Reconciliations by result.",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciliations that failed.",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Time per reconciliation.",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge("workqueue_depth", "Keys waiting.", ["name"], registry=r)
        self.queue_adds = Counter("workqueue_adds_total", "Keys added.", ["name"], registry=r)
        self.queue_retries = Counter(
            "workqueue_retries_total", "Keys re-added after a failure.", ["name"], registry=r
        )
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "Time a key waited before a worker took it.",
            ["name"],
            registry=r,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "Time a worker held a key.",
            ["name"],
            registry=r,
        )
        self.pod_creates = Counter("volcano_pod_creates_total", "Pods created.", registry=r)
        self.job_to_pod_latency = Histogram(
            JOB_TO_POD_LATENCY, JOB_TO_POD_HELP, buckets=JOB_TO_POD_BUCKETS, registry=r
        )
        self.pod_deletes = Counter("volcano_pod_deletes_total", "Pods deleted.", registry=r)
        self.phase_transitions = Counter(
            "volcano_job_phase_transitions_total",
            "Job phase changes written, by the phase entered.",
            ["phase"],
            registry=r,
        )
        # Volcano's job controller counters (see controller.volcanometrics).
        self.volcano_jobs = JobPhaseCounters(r)
        self.foreign_status_writers = Counter(
            "vcjob_foreign_job_status_writers_total",
            "Writers of a Job's status other than vcjob's controller, seen since it started "
            "(once per Job and writer).",
            ["manager"],
            registry=r,
        )
        self.resync_skips = Counter(
            "vcjob_resync_skipped_jobs_total",
            "Jobs a periodic resync left alone: nothing they depend on changed since their last "
            "reconcile, which changed nothing.",
            registry=r,
        )
        self.pruned_status_fields = Gauge(
            "vcjob_job_crd_pruned_status_fields",
            "vcjob's Job status fields the installed Job CRD drops (0: none; the CRD is vcjob's).",
            registry=r,
        )
        self.is_leader = Gauge(
            "leader_election_master_status", "1 while this replica leads.", ["name"], registry=r
        )

    def queue_hooks(self) -> QueueHooks:
        name = CONTROLLER
        queued = self.queue_duration.labels(name).observe
        worked = self.work_duration.labels(name).observe
        in_flight = self.in_flight

        def taken(seconds: float) -> None:
            queued(seconds)
            in_flight.started(seconds)

        def done(seconds: float) -> None:
            worked(seconds)
            in_flight.finished(seconds)

        return QueueHooks(
            depth=self.queue_depth.labels(name).set,
            added=self.queue_adds.labels(name).inc,
            retried=self.queue_retries.labels(name).inc,
            queued_for=taken,
            worked_for=done,
        )

    def count_rest_requests(self, api_client: Any) -> None:
        """Count every request `api_client` (a kubernetes ApiClient) sends, as client-go's
        `rest_client_requests_total`: code `<error>` when no answer came back."""
        rest = api_client.rest_client
        send = rest.request
        host = urlsplit(str(api_client.configuration.host)).netloc
        counter = self.rest_requests

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            try:
                response = send(method, url, *args, **kwargs)
            except Exception:
                counter.labels("<error>", method, host).inc()
                raise
            counter.labels(str(response.status), method, host).inc()
            return response

        rest.request = request
