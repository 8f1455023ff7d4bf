"""The elastic autoscaler's loop: every period, on the leader, list → plan → patch → record.

The decisions come from `plan_elastic` (`controller.elastic.decide`); this module only does the I/O.
Each change is one JSON Patch on the Job that first tests the task's name and its old replicas, so
a replica count someone else changed since the listing is never overwritten: the patch fails and
the next round plans again from what is there.
"""

from __future__ import annotations

import logging
import secrets
import socket
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import jsonpointer
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from controller.elastic.decide.plan import (
    DONOR_PHASES,
    ElasticSettings,
    ScaleDecision,
    fulfillment_score,
    has_elastic_work,
    plan_elastic,
)
from controller.elastic.decide.views import (
    RESIZED_AT_KEY,
    ElasticJobView,
    job_view_from_wire,
    node_view_from_wire,
    pod_view_from_wire,
    resized_at_annotation,
    resized_at_from_annotations,
)
from kubeio.client import EVENTS, JOBS, PODS, ApiClient, Kube, Resource
from kubeio.errors import KubeError, NotFoundError, TransientError
from kubeio.kubelike import KubeLike
from shared.rfc3339 import format_time
from shared.wire import WireObject, annotations_of, metadata, spec_of

log = logging.getLogger("controller.elastic")

COMPONENT: Final = "vcjob-elastic"
EVENT_REASON: Final = "Scaled"
JSON_PATCH: Final = "application/json-patch+json"
NODES: Final = Resource("", "v1", "nodes", "Node", namespaced=False)
SCORE_BUCKETS: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: Rounds that a wake-up brings forward start at least this long after the previous one: a burst
#: of arrivals is planned in a few rounds, not one round each.
DEFAULT_MIN_SPACING: Final = 0.2
#: The longest the loop waits without looking at its stop event.
_POLL_SECONDS: Final = 0.5


class ElasticMetrics:
    """Rounds, scale-ups, scale-downs and the spread of fulfillment scores (no job labels)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.rounds = Counter(
            "volcano_elastic_rounds_total", "Elastic autoscaler rounds run.", registry=registry
        )
        self.round_errors = Counter(
            "volcano_elastic_round_errors_total",
            "Elastic autoscaler rounds that failed.",
            registry=registry,
        )
        self.scale_ups = Counter(
            "volcano_elastic_scale_ups_total",
            "Elastic task replica increases applied.",
            registry=registry,
        )
        self.scale_downs = Counter(
            "volcano_elastic_scale_downs_total",
            "Elastic task replica decreases applied.",
            registry=registry,
        )
        self.score = Histogram(
            "volcano_elastic_fulfillment_score",
            "Fulfillment score of every elastic task, observed once per round.",
            buckets=SCORE_BUCKETS,
            registry=registry,
        )


_metrics_by_registry: weakref.WeakKeyDictionary[CollectorRegistry, ElasticMetrics] = (
    weakref.WeakKeyDictionary()
)
_metrics_lock = threading.Lock()


def metrics_for(registry: CollectorRegistry) -> ElasticMetrics:
    """One set of collectors per registry (a registry refuses the same name twice)."""
    with _metrics_lock:
        metrics = _metrics_by_registry.get(registry)
        if metrics is None:
            metrics = ElasticMetrics(registry)
            _metrics_by_registry[registry] = metrics
        return metrics


def replicas_patch(
    task_index: int, decision: ScaleDecision, job: Mapping[str, Any], now: datetime
) -> list[dict[str, Any]]:
    """The JSON Patch for one decision; it applies only if the task still has the old count.

    The same patch records when the task was resized (RESIZED_AT_KEY), so the time the resize
    cooldown counts from is in the API with the change itself, whatever happens to this process.
    """
    base = f"/spec/tasks/{task_index}"
    annotations = metadata(job).get("annotations")
    resized = resized_at_annotation(
        resized_at_from_annotations(annotations_of(job)), decision.task, now
    )
    record: dict[str, Any] = (
        {
            "op": "add",
            "path": f"/metadata/annotations/{jsonpointer.escape(RESIZED_AT_KEY)}",
            "value": resized,
        }
        if isinstance(annotations, Mapping)
        else {"op": "add", "path": "/metadata/annotations", "value": {RESIZED_AT_KEY: resized}}
    )
    return [
        {"op": "test", "path": f"{base}/name", "value": decision.task},
        {"op": "test", "path": f"{base}/replicas", "value": decision.from_replicas},
        {"op": "replace", "path": f"{base}/replicas", "value": decision.to_replicas},
        record,
    ]


def task_index(job: Mapping[str, Any], task: str) -> int | None:
    for index, spec in enumerate(spec_of(job).get("tasks") or []):
        if isinstance(spec, Mapping) and spec.get("name") == task:
            return index
    return None


def scaled_event(job: Mapping[str, Any], message: str, instance: str, now: datetime) -> WireObject:
    """A core/v1 Event `Scaled` on the job, reported by `vcjob-elastic`."""
    meta = job.get("metadata") or {}
    at = format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name', 'job')}.{secrets.token_hex(8)}",
            "namespace": meta.get("namespace"),
        },
        "involvedObject": {
            "apiVersion": job.get("apiVersion"),
            "kind": job.get("kind"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": "Normal",
        "reason": EVENT_REASON,
        "message": message,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }


class ElasticLoop:
    """Runs `plan_elastic` every `period_seconds` while `is_leader()`, until `stop` is set."""

    def __init__(
        self,
        api_client: ApiClient,
        period_seconds: float,
        dry_run: bool,
        max_step: int,
        gpu_resource: str,
        is_leader: Callable[[], bool],
        stop: threading.Event,
        *,
        registry: CollectorRegistry | None = None,
        kube: KubeLike | None = None,
        min_growth: float = 0.0,
        resize_cooldown: float = 0.0,
        min_spacing: float = DEFAULT_MIN_SPACING,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        list_jobs: Callable[[], list[WireObject]] | None = None,
    ) -> None:
        """`list_jobs`: the Jobs as a watch-fed cache holds them (the job controller's), read
        every round; without it each round lists them from the API."""
        if period_seconds <= 0:
            raise ValueError(f"the elastic period must be positive, got {period_seconds}")
        self._kube = kube or Kube(api_client)
        self._list_jobs = list_jobs or (lambda: self._kube.list(JOBS)[0])
        self._period = period_seconds
        self._dry_run = dry_run
        self._settings = ElasticSettings(
            gpu_resource=gpu_resource,
            max_step=max_step,
            min_growth=min_growth,
            resize_cooldown=timedelta(seconds=resize_cooldown),
        )
        self._is_leader = is_leader
        self._stop = stop
        self._min_spacing = min(min_spacing, period_seconds)
        self._wake = threading.Event()
        self._now = now
        self._instance = socket.gethostname()
        self.metrics = metrics_for(registry or REGISTRY)

    def run(self) -> None:
        log.info(
            "elastic loop started",
            extra={
                "period": self._period,
                "dry_run": self._dry_run,
                "max_step": self._settings.max_step,
                "min_growth": self._settings.min_growth,
                "resize_cooldown": self._settings.resize_cooldown.total_seconds(),
                "gpu_resource": self._settings.gpu_resource,
            },
        )
        while not self._stop.is_set():
            started = time.monotonic()
            if self._is_leader():
                try:
                    self.run_round()
                except Exception as exc:  # a failed round must never end the loop
                    self.metrics.round_errors.inc()
                    log.exception("elastic round failed", extra={"error": str(exc)})
            self._wait_for_next_round(started)
        log.info("elastic loop stopped")

    def wake(self) -> None:
        """Plan again soon (a job turned Pending); safe to call from any thread, never blocks."""
        self._wake.set()

    def _wait_for_next_round(self, started: float) -> None:
        """Until a period after `started`, or a wake-up but no sooner than the minimum spacing."""
        # A wake-up during the round just run may be for a job it did not see yet: keep it.
        while not self._stop.is_set():
            elapsed = time.monotonic() - started
            if elapsed >= self._period:
                return
            if self._wake.is_set():
                self._wake.clear()
                self._stop.wait(max(0.0, self._min_spacing - elapsed))
                return
            self._wake.wait(min(self._period - elapsed, _POLL_SECONDS))

    def run_round(self) -> list[ScaleDecision]:
        """One round: returns the decisions planned (applied unless dry run)."""
        jobs = self._list_jobs()
        views: list[ElasticJobView] = []
        by_key: dict[tuple[str, str], WireObject] = {}
        for job in jobs:
            try:
                view = job_view_from_wire(job)
            except ValueError as exc:
                log.warning("elastic job skipped", extra={"error": str(exc)})
                continue
            views.append(view)
            by_key[(view.namespace, view.name)] = job
        if not has_elastic_work(views):
            # On by default: a cluster without running elastic jobs costs no request.
            self.metrics.rounds.inc()
            return []
        nodes, _ = self._kube.list(NODES)
        pods, _ = self._kube.list(PODS)
        now = self._now()
        decisions = plan_elastic(
            views,
            [node_view_from_wire(n) for n in nodes],
            [pod_view_from_wire(p) for p in pods],
            self._settings,
            now,
        )
        applied: dict[tuple[str, str, str], int] = {}
        for decision in decisions:
            key = (decision.namespace, decision.job)
            patched = self._apply(decision, by_key[key], now)
            if patched is not None:
                # The next decision on the same job keeps this one's resize time.
                by_key[key] = patched
                applied[(decision.namespace, decision.job, decision.task)] = decision.to_replicas
        self.metrics.rounds.inc()
        self._observe_scores(views, applied)
        log.debug("elastic round", extra={"jobs": len(views), "decisions": len(decisions)})
        return decisions

    def _apply(self, decision: ScaleDecision, job: WireObject, now: datetime) -> WireObject | None:
        """Patches the job; returns it as patched, or None when the change was not applied."""
        extra = {
            "namespace": decision.namespace,
            "job": decision.job,
            "task": decision.task,
            "from_replicas": decision.from_replicas,
            "to_replicas": decision.to_replicas,
            "reason": decision.reason,
            "dry_run": self._dry_run,
        }
        if self._dry_run:
            log.info("elastic scale planned", extra=extra)
            return None
        index = task_index(job, decision.task)
        if index is None:  # the listing and the views disagree: only a bug gets here
            log.error("elastic scale skipped: task not in job", extra=extra)
            return None
        try:
            patched = self._kube.request(
                "PATCH",
                JOBS.path(decision.namespace, decision.job),
                body=replicas_patch(index, decision, job, now),
                content_type=JSON_PATCH,
            )
        except (NotFoundError, TransientError) as exc:
            log.warning("elastic scale not applied", extra={**extra, "error": str(exc)})
            return None
        except KubeError as exc:
            # 422 from a failed `test`: the task changed since the listing; the next round re-plans.
            log.warning("elastic scale rejected", extra={**extra, "error": str(exc)})
            return None
        if decision.scales_up:
            self.metrics.scale_ups.inc()
        else:
            self.metrics.scale_downs.inc()
        log.info("elastic scale", extra=extra)
        written = patched if isinstance(patched, dict) and patched else job
        self._record(written, decision)
        return written

    def _record(self, job: WireObject, decision: ScaleDecision) -> None:
        try:
            self._kube.create(
                EVENTS,
                decision.namespace,
                scaled_event(job, decision.reason, self._instance, self._now()),
            )
        except KubeError as exc:  # events are best effort
            log.warning(
                "elastic event not recorded",
                extra={"namespace": decision.namespace, "job": decision.job, "error": str(exc)},
            )

    def _observe_scores(
        self, views: Sequence[ElasticJobView], applied: Mapping[tuple[str, str, str], int]
    ) -> None:
        for view in views:
            if view.phase not in DONOR_PHASES:
                continue
            for task in view.tasks:
                if task.is_elastic:
                    current = applied.get((view.namespace, view.name, task.name), task.replicas)
                    self.metrics.score.observe(fulfillment_score(replace(task, replicas=current)))
