"""Volcano's metric names: the queue gauges from Queues and PodGroups, the job phase counters."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from controller.volcanometrics import (
    JobPhaseCounters,
    QueueCollector,
    Sample,
    exponential_buckets_range,
    job_to_pod_latency_ms,
    queue_samples,
)


def queue(name: str, spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec, "status": status}


def values(samples: list[Sample]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, s.labels): s.value for s in samples}


def test_queue_gauges_from_spec_and_status() -> None:
    q1 = queue(
        "q1",
        {"weight": 3, "capability": {"cpu": "4", "memory": "2Gi", "nvidia.com/gpu": "2"}},
        {
            "pending": 1,
            "inqueue": 2,
            "running": 3,
            "unknown": 1,
            "allocated": {"cpu": "1500m", "pods": "2"},
        },
    )
    got = values(queue_samples([q1], []))
    label = (("queue_name", "q1"),)
    assert got[("volcano_queue_pod_group_pending_count", label)] == 1
    assert got[("volcano_queue_pod_group_inqueue_count", label)] == 2
    assert got[("volcano_queue_pod_group_running_count", label)] == 3
    assert got[("volcano_queue_pod_group_unknown_count", label)] == 1
    assert got[("volcano_queue_pod_group_completed_count", label)] == 0
    assert got[("volcano_queue_weight", label)] == 3
    assert got[("volcano_queue_capacity_milli_cpu", label)] == 4000
    assert got[("volcano_queue_capacity_memory_bytes", label)] == 2 * 2**30
    gpu = (("queue_name", "q1"), ("resource", "nvidia.com/gpu"))
    assert got[("volcano_queue_capacity_scalar_resources", gpu)] == 2
    assert got[("volcano_queue_allocated_milli_cpu", label)] == 1500
    # pods is not a scalar resource, and what the queue does not name is not reported.
    assert not any(name.endswith("scalar_resources") and "pods" in str(lab) for name, lab in got)
    assert ("volcano_queue_deserved_milli_cpu", label) not in got


def test_unweighted_queue_and_unschedulable_podgroups() -> None:
    unschedulable = {"status": {"conditions": [{"type": "Unschedulable", "status": "True"}]}}
    cleared = {"status": {"conditions": [{"type": "Unschedulable", "status": "False"}]}}
    got = values(queue_samples([queue("default", {}, {})], [unschedulable, cleared, {}]))
    assert got[("volcano_queue_weight", (("queue_name", "default"),))] == 1
    assert got[("volcano_unschedule_job_count", ())] == 1


def test_collector_exports_the_samples_in_the_text_format() -> None:
    registry = CollectorRegistry()
    registry.register(QueueCollector(lambda: ([queue("q", {}, {"running": 2})], [])))
    text = generate_latest(registry).decode()
    assert 'volcano_queue_pod_group_running_count{queue_name="q"} 2.0' in text


def test_job_phase_counters_count_completed_and_failed_and_forget_deleted_jobs() -> None:
    registry = CollectorRegistry()
    counters = JobPhaseCounters(registry)
    counters.entered("ns/a", "default", "Completed")
    counters.entered("ns/b", "q1", "Failed")
    counters.entered("ns/b", "q1", "Running")
    labels_a = {"job_name": "ns/a", "queue_name": "default"}
    labels_b = {"job_name": "ns/b", "queue_name": "q1"}
    assert registry.get_sample_value("volcano_job_completed_phase_count", labels_a) == 1
    assert registry.get_sample_value("volcano_job_failed_phase_count", labels_b) == 1
    text = generate_latest(registry).decode()
    assert 'volcano_job_failed_phase_count{job_name="ns/b",queue_name="q1"} 1.0' in text
    counters.forget("ns/a")
    assert registry.get_sample_value("volcano_job_completed_phase_count", labels_a) is None


@pytest.mark.parametrize(
    ("low", "high", "count", "expected"),
    [
        (1, 8, 4, (1.0, 2.0, 4.0, 8.0)),
        (50, 60000, 30, None),  # Volcano's: checked for its ends and length below
    ],
)
def test_exponential_buckets_range(
    low: float, high: float, count: int, expected: tuple[float, ...] | None
) -> None:
    buckets = exponential_buckets_range(low, high, count)
    assert len(buckets) == count
    assert buckets[0] == pytest.approx(low) and buckets[-1] == pytest.approx(high)
    if expected is not None:
        assert buckets == pytest.approx(expected)


@pytest.mark.parametrize(("low", "high", "count"), [(0, 1, 3), (5, 5, 3), (1, 2, 1)])
def test_exponential_buckets_range_refuses_what_has_no_range(
    low: float, high: float, count: int
) -> None:
    with pytest.raises(ValueError, match="need 0 < low < high"):
        exponential_buckets_range(low, high, count)


def created(at: str | None) -> dict[str, Any]:
    return {"metadata": {"creationTimestamp": at} if at else {}}


@pytest.mark.parametrize(
    ("job", "pod", "expected"),
    [
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:03Z", 3000.0),
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 0.0),
        (None, "2026-01-01T00:00:03Z", None),
        ("2026-01-01T00:00:00Z", "yesterday", None),
    ],
)
def test_job_to_pod_latency_ms(job: str | None, pod: str | None, expected: float | None) -> None:
    assert job_to_pod_latency_ms(created(job), created(pod)) == expected
