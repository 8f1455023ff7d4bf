"""Volcano's metric names on the controller's /metrics, beside the controller-runtime ones.

Volcano's controller exports `volcano_queue_pod_group_<phase>_count{queue_name}` (its queue
controller, from each Queue's status) and `volcano_job_completed_phase_count` /
`volcano_job_failed_phase_count{job_name,queue_name}` (its job controller, when a Job reaches
Completed or Failed). Of its scheduler's, those a Queue's spec and status and the PodGroups
answer: `volcano_queue_weight`, `volcano_queue_capacity_*`, `volcano_queue_deserved_*`,
`volcano_queue_allocated_*` and `volcano_unschedule_job_count`.

Volcano 1.15's job controller also observes, for each pod it creates, the time since its Job was
created: `volcano_controller_job_to_pod_creation_latency_milliseconds` (a histogram with
`JOB_TO_POD_BUCKETS`, from the two objects' `creationTimestamp`s, as Volcano takes them).

`queue_samples` decides the gauges from the Queues and PodGroups the queue controller watches;
`QueueCollector` reads them at each scrape.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, UnknownMetricFamily
from prometheus_client.registry import Collector

from shared import quantity, rfc3339
from shared.wire import conditions_of, creation_timestamp, metadata, name_of, spec_of, status_of

QUEUE_PHASES: Final = ("inqueue", "pending", "running", "unknown", "completed")
JOB_TO_POD_LATENCY: Final = "volcano_controller_job_to_pod_creation_latency_milliseconds"
JOB_TO_POD_HELP: Final = "Latency from VCJob creation to pod created in milliseconds"
# What a queue names besides cpu and memory but Volcano does not report as a scalar resource.
_NOT_SCALAR: Final = ("cpu", "memory", "pods")


@dataclass(frozen=True)
class Sample:
    name: str
    help: str
    labels: tuple[tuple[str, str], ...]
    value: float


def _resources(raw: Mapping[str, Any] | None) -> dict[str, Decimal]:
    amounts = quantity.parse_resource_list(raw or {})
    return {
        k: v for k, v in amounts.items() if not k.startswith(("requests.", "limits.", "count/"))
    }


def _resource_samples(kind: str, what: str, queue: str, raw: Any) -> list[Sample]:
    """`volcano_queue_<kind>_milli_cpu`, `…_memory_bytes` and `…_scalar_resources{resource}`
    for the resources `raw` names."""
    resources = _resources(raw if isinstance(raw, Mapping) else None)
    out = []
    if "cpu" in resources:
        out.append(
            Sample(
                f"volcano_queue_{kind}_milli_cpu",
                f"{what} CPU of the queue, in millicores",
                (("queue_name", queue),),
                float(resources["cpu"] * 1000),
            )
        )
    if "memory" in resources:
        out.append(
            Sample(
                f"volcano_queue_{kind}_memory_bytes",
                f"{what} memory of the queue, in bytes",
                (("queue_name", queue),),
                float(resources["memory"]),
            )
        )
    for name in sorted(resources):
        if name in _NOT_SCALAR:
            continue
        out.append(
            Sample(
                f"volcano_queue_{kind}_scalar_resources",
                f"{what} scalar resources of the queue",
                (("queue_name", queue), ("resource", name)),
                float(resources[name]),
            )
        )
    return out


def exponential_buckets_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """`count` bucket bounds from `low` to `high`, each a constant factor above the one before
    (Prometheus' ExponentialBucketsRange)."""
    if low <= 0 or high <= low or count < 2:
        raise ValueError(f"need 0 < low < high and count >= 2, got {low}, {high}, {count}")
    factor = (high / low) ** (1 / (count - 1))
    return tuple(low * factor**i for i in range(count))


JOB_TO_POD_BUCKETS: Final = exponential_buckets_range(50, 60000, 30)


def job_to_pod_latency_ms(job: Mapping[str, Any], pod: Mapping[str, Any]) -> float | None:
    """Milliseconds from the Job's creation to the pod's, from their `creationTimestamp`s; None
    when either is missing or unreadable."""
    job_created = rfc3339.parse_time(creation_timestamp(job))
    pod_created = rfc3339.parse_time(creation_timestamp(pod))
    if job_created is None or pod_created is None:
        return None
    return (pod_created - job_created).total_seconds() * 1000


def _unschedulable(podgroup: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Unschedulable" and c.get("status") == "True"
        for c in conditions_of(podgroup)
    )


def queue_samples(
    queues: Iterable[Mapping[str, Any]], podgroups: Iterable[Mapping[str, Any]]
) -> list[Sample]:
    """Volcano's queue gauges, one set per Queue, and the count of unschedulable PodGroups."""
    out: list[Sample] = []
    for queue in sorted(queues, key=lambda q: str(metadata(q).get("name"))):
        name = name_of(queue)
        spec, status = spec_of(queue), status_of(queue)
        label = (("queue_name", name),)
        for phase in QUEUE_PHASES:
            out.append(
                Sample(
                    f"volcano_queue_pod_group_{phase}_count",
                    f"The number of {phase.capitalize()} PodGroup in this queue",
                    label,
                    float(status.get(phase) or 0),
                )
            )
        out.append(
            Sample(
                "volcano_queue_weight", "Weight of the queue", label, float(spec.get("weight") or 1)
            )
        )
        out += _resource_samples("capacity", "Capability", name, spec.get("capability"))
        out += _resource_samples("deserved", "Deserved", name, spec.get("deserved"))
        out += _resource_samples("allocated", "Allocated", name, status.get("allocated"))
    out.append(
        Sample(
            "volcano_unschedule_job_count",
            "Number of jobs could not be scheduled",
            (),
            float(sum(1 for g in podgroups if _unschedulable(g))),
        )
    )
    return out


class QueueCollector(Collector):
    """`queue_samples` over what `source` returns (Queues, PodGroups) at scrape time."""

    def __init__(
        self,
        source: Callable[[], tuple[list[dict[str, Any]], list[dict[str, Any]]]],
    ) -> None:
        self._source = source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        queues, podgroups = self._source()
        families: dict[str, GaugeMetricFamily] = {}
        for sample in queue_samples(queues, podgroups):
            family = families.get(sample.name)
            if family is None:
                family = GaugeMetricFamily(
                    sample.name, sample.help, labels=[k for k, _ in sample.labels]
                )
                families[sample.name] = family
            family.add_metric([v for _, v in sample.labels], sample.value)
        yield from families.values()


class JobPhaseCounters(Collector):
    """`volcano_job_completed_phase_count` and `volcano_job_failed_phase_count`, labelled
    `job_name` (`namespace/name`) and `queue_name`; a deleted Job's series go with it. They are
    exported untyped under Volcano's exact names (a Python `Counter` would add `_total`)."""

    NAMES: Final = {
        "Completed": ("volcano_job_completed_phase_count", "Number of job completed phase"),
        "Failed": ("volcano_job_failed_phase_count", "Number of job failed phase"),
    }

    def __init__(self, registry: CollectorRegistry) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], int] = {}
        registry.register(self)

    def entered(self, job: str, queue: str, phase: str) -> None:
        if phase not in self.NAMES:
            return
        with self._lock:
            key = (phase, job, queue)
            self._counts[key] = self._counts.get(key, 0) + 1

    def forget(self, job: str) -> None:
        with self._lock:
            for key in [k for k in self._counts if k[1] == job]:
                del self._counts[key]

    def collect(self) -> Iterator[UnknownMetricFamily]:
        with self._lock:
            counts = dict(self._counts)
        for phase, (name, help_text) in self.NAMES.items():
            family = UnknownMetricFamily(name, help_text, labels=["job_name", "queue_name"])
            for (entered, job, queue), count in sorted(counts.items()):
                if entered == phase:
                    family.add_metric([job, queue], float(count))
            yield family
