"""The controller's metrics as controller-runtime users expect them: process, REST client and
in-flight workqueue series, and no `_created` series."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import generate_latest

from controller.metrics import InFlightWork, Metrics
from kubeio.workqueue import WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_in_flight_work_tracks_what_workers_hold() -> None:
    clock = FakeClock()
    work = InFlightWork("job", clock)
    work.started(0.0)
    clock.now += 2
    work.started(0.0)
    clock.now += 3
    assert sorted(work.ages()) == [3.0, 5.0]
    work.finished(5.0)  # the first key, held 5 s
    assert work.ages() == [3.0]
    families = {f.name: f.samples[0].value for f in work.collect()}
    assert families == {
        "workqueue_unfinished_work_seconds": 3.0,
        "workqueue_longest_running_processor_seconds": 3.0,
    }
    work.finished(3.0)
    work.finished(1.0)  # a stray report changes nothing
    assert [f.samples[0].value for f in work.collect()] == [0.0, 0.0]


def test_the_queue_feeds_the_in_flight_gauges() -> None:
    metrics = Metrics()
    queue = WorkQueue(hooks=metrics.queue_hooks())
    queue.add("ns/a")
    assert queue.get(timeout=1) == "ns/a"
    value = metrics.registry.get_sample_value
    assert value("workqueue_longest_running_processor_seconds", {"name": "job"}) is not None
    assert len(metrics.in_flight.ages()) == 1
    queue.done("ns/a")
    assert metrics.in_flight.ages() == []
    assert value("workqueue_unfinished_work_seconds", {"name": "job"}) == 0.0


@dataclass
class FakeResponse:
    status: int


class FakeRest:
    def __init__(self) -> None:
        self.fail = False

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> FakeResponse:
        if self.fail:
            raise OSError("connection refused")
        return FakeResponse(404 if url.endswith("/missing") else 200)


class FakeConfiguration:
    host = "https://127.0.0.1:6443"


class FakeApiClient:
    def __init__(self) -> None:
        self.rest_client = FakeRest()
        self.configuration = FakeConfiguration()


def test_rest_client_requests_are_counted_by_code_method_and_host() -> None:
    metrics = Metrics()
    api_client = FakeApiClient()
    metrics.count_rest_requests(api_client)
    rest = api_client.rest_client
    rest.request("GET", "https://127.0.0.1:6443/api/v1/pods")
    rest.request("GET", "https://127.0.0.1:6443/api/v1/pods/missing")
    rest.fail = True
    with pytest.raises(OSError, match="refused"):
        rest.request("POST", "https://127.0.0.1:6443/api/v1/pods")
    value = metrics.registry.get_sample_value
    host = "127.0.0.1:6443"
    assert value("rest_client_requests_total", {"code": "200", "method": "GET", "host": host}) == 1
    assert value("rest_client_requests_total", {"code": "404", "method": "GET", "host": host}) == 1
    assert (
        value("rest_client_requests_total", {"code": "<error>", "method": "POST", "host": host})
        == 1
    )


def test_process_series_and_no_created_series() -> None:
    metrics = Metrics()
    metrics.reconcile_total.labels("job", "success").inc()
    metrics.reconcile_time.labels("job").observe(0.01)
    text = generate_latest(metrics.registry).decode()
    assert "process_resident_memory_bytes" in text
    assert "process_cpu_seconds_total" in text
    assert "_created" not in text
