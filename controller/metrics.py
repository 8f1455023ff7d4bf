"""Prometheus metrics of one controller instance (controller-runtime names; no job labels)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kubeio.workqueue import QueueHooks

CONTROLLER = "job"
RECONCILE_BUCKETS: tuple[float, ...] = (
    *(0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075),
    *(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
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
        self.pod_deletes = Counter("volcano_pod_deletes_total", "Pods deleted.", registry=r)
        self.phase_transitions = Counter(
            "volcano_job_phase_transitions_total",
            "Job phase changes written, by the phase entered.",
            ["phase"],
            registry=r,
        )
        self.is_leader = Gauge(
            "leader_election_master_status", "1 while this replica leads.", ["name"], registry=r
        )

    def queue_hooks(self) -> QueueHooks:
        name = CONTROLLER
        return QueueHooks(
            depth=self.queue_depth.labels(name).set,
            added=self.queue_adds.labels(name).inc,
            retried=self.queue_retries.labels(name).inc,
            queued_for=self.queue_duration.labels(name).observe,
            worked_for=self.work_duration.labels(name).observe,
        )
