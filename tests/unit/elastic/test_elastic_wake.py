"""Arrivals wake the autoscaler: a job that turns Pending is planned for at once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.elastic.decide.views import job_phase
from controller.elastic.decide.wake import has_elastic_task, wakes_autoscaler
from controller.elastic.shell import ElasticLoop
from controller.job.shell.cache import Cache
from controller.job.shell.phasewatch import JobPhaseStore
from kubeio.client import ApiClient
from tests.support import FakeKube, wait_until


@pytest.mark.parametrize(
    ("previous", "phase", "any_elastic", "wakes"),
    [
        pytest.param(None, "Pending", True, True, id="new and Pending"),
        pytest.param(None, None, True, False, id="new, no phase yet"),
        pytest.param(None, "Running", True, False, id="first seen Running"),
        pytest.param("Restarting", "Pending", True, True, id="back from Restarting"),
        pytest.param("Pending", "Pending", True, False, id="still Pending"),
        pytest.param("Pending", "Running", True, False, id="started"),
        pytest.param(None, "Pending", False, False, id="no elastic job: nothing to give room"),
        pytest.param("Restarting", "Pending", False, False, id="no elastic job, restarted"),
    ],
)
def test_wakes_autoscaler(
    previous: str | None, phase: str | None, any_elastic: bool, wakes: bool
) -> None:
    assert wakes_autoscaler(previous, phase, any_elastic) is wakes


def task(**bounds: Any) -> dict[str, Any]:
    return {"name": "worker", "replicas": 2, **bounds}


@pytest.mark.parametrize(
    ("job", "elastic"),
    [
        pytest.param({}, False, id="no spec"),
        pytest.param({"spec": {"tasks": "odd"}}, False, id="tasks not a list"),
        pytest.param({"spec": {"tasks": [task()]}}, False, id="no bounds"),
        pytest.param({"spec": {"tasks": [task(minReplicas=2, maxReplicas=2)]}}, False, id="equal"),
        pytest.param({"spec": {"tasks": [task(minReplicas=1, maxReplicas=4)]}}, True, id="elastic"),
        pytest.param({"spec": {"tasks": [task(minReplicas=1)]}}, False, id="only a minimum"),
        pytest.param({"spec": {"tasks": [task(minReplicas="1", maxReplicas=4)]}}, False, id="odd"),
        pytest.param(
            {"spec": {"tasks": ["odd", task(), task(minReplicas=1, maxReplicas=3)]}},
            True,
            id="second task elastic",
        ),
    ],
)
def test_has_elastic_task(job: dict[str, Any], elastic: bool) -> None:
    assert has_elastic_task(job) is elastic


@pytest.mark.parametrize(
    ("job", "phase"),
    [
        ({}, None),
        ({"status": {}}, None),
        ({"status": {"state": {"phase": "Pending"}}}, "Pending"),
        ({"status": {"state": "odd"}}, None),
    ],
)
def test_job_phase(job: dict[str, Any], phase: str | None) -> None:
    assert job_phase(job) == phase


def wire(name: str, phase: str | None, version: int, elastic: bool = False) -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": str(version),
        },
        "spec": {"tasks": [task(minReplicas=2, maxReplicas=8) if elastic else task()]},
    }
    if phase:
        job["status"] = {"state": {"phase": phase}}
    return job


def test_the_job_watch_tells_when_a_job_turns_pending() -> None:
    woken: list[int] = []
    store = JobPhaseStore(Cache(), [lambda: woken.append(1)])
    store.replace_all("Job", [wire("old", "Pending", 1), wire("run", "Running", 2, elastic=True)])
    assert len(woken) == 1  # a job found Pending at the first listing may need room too
    store.upsert("Job", wire("a", None, 3))
    store.upsert("Job", wire("a", "Pending", 4))
    store.upsert("Job", wire("a", "Pending", 5))
    assert len(woken) == 2
    store.upsert("Job", wire("a", "Running", 6))
    store.upsert("Job", wire("a", "Pending", 7))
    assert len(woken) == 3
    store.remove("Job", wire("a", "Pending", 8))
    store.replace_all(
        "Job",
        [wire("old", "Pending", 9), wire("a", "Pending", 10), wire("run", "Running", 2, True)],
    )
    assert len(woken) == 4  # only "a", gone and back; "old" was Pending already
    assert store.upsert("Job", wire("b", "Pending", 11)) == "default/b"  # the cache is fed


def test_without_elastic_jobs_arrivals_do_not_wake_the_autoscaler() -> None:
    woken: list[int] = []
    store = JobPhaseStore(Cache(), [lambda: woken.append(1)])
    store.replace_all("Job", [wire("old", "Pending", 1), wire("run", "Running", 2)])
    store.upsert("Job", wire("a", "Pending", 3))
    assert woken == []  # nothing could give room
    store.upsert("Job", wire("e", "Running", 4, elastic=True))
    store.upsert("Job", wire("b", "Pending", 5))
    assert len(woken) == 1
    store.remove("Job", wire("e", "Running", 6, elastic=True))
    store.upsert("Job", wire("c", "Pending", 7))
    assert len(woken) == 1  # the elastic job is gone
    store.upsert("Job", wire("f", "Pending", 8, elastic=True))
    assert len(woken) == 2  # an elastic job that arrives may be given idle capacity at once
    store.upsert("Job", wire("f", "Running", 9))  # its elastic bounds edited away
    store.upsert("Job", wire("d", "Pending", 10))
    assert len(woken) == 2


class CountedEvent(threading.Event):
    """The loop's wake-up flag, counting the waits that timed out (no wake-up came)."""

    def __init__(self) -> None:
        super().__init__()
        self.idle_waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        woken = super().wait(timeout)
        if not woken:
            self.idle_waits += 1
        return woken


def test_a_wake_up_brings_the_next_round_forward_after_the_minimum_spacing() -> None:
    kube, stop = FakeKube(), threading.Event()
    loop = ElasticLoop(
        ApiClient(),
        60.0,
        False,
        1,
        "nvidia.com/gpu",
        lambda: True,
        stop,
        registry=CollectorRegistry(),
        kube=kube,
        min_spacing=0.05,
    )
    waits = CountedEvent()
    loop._wake = waits

    def rounds() -> int:
        return sum(1 for verb, plural, _ in kube.calls if (verb, plural) == ("list", "jobs"))

    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    try:
        wait_until("the first round", lambda: rounds() == 1, timeout=5, interval=0.01)
        # The loop has since woken up twice on its own and gone back to sleep: the period is a
        # minute, so no round came of it.
        wait_until("two idle waits", lambda: waits.idle_waits >= 2, timeout=10, interval=0.01)
        assert rounds() == 1
        started = time.monotonic()
        loop.wake()
        wait_until("the round the wake-up brings", lambda: rounds() == 2, timeout=5, interval=0.01)
        assert time.monotonic() - started < 2
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
