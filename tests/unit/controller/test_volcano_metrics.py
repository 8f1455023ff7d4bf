"""Volcano's metric names: the queue gauges from Queues and PodGroups, the job phase counters."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from controller.volcanometrics import JobPhaseCounters, QueueCollector, Sample, queue_samples


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
