"""Arrivals wake the autoscaler: a job that turns Pending is planned for at once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.cache import Cache
from controller.elastic_loop import ElasticLoop
from controller.elastic_plan import job_phase, wakes_autoscaler
from controller.runner import _JobPhaseStore
from localcluster.testing import wait_until


@pytest.mark.parametrize(
    ("previous", "phase", "wakes"),
    [
        pytest.param(None, "Pending", True, id="new and Pending"),
        pytest.param(None, None, False, id="new, no phase yet"),
        pytest.param(None, "Running", False, id="first seen Running"),
        pytest.param("Restarting", "Pending", True, id="back from Restarting"),
        pytest.param("Pending", "Pending", False, id="still Pending"),
        pytest.param("Pending", "Running", False, id="started"),
    ],
)
def test_wakes_autoscaler(previous: str | None, phase: str | None, wakes: bool) -> None:
    assert wakes_autoscaler(previous, phase) is wakes


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


def wire(name: str, phase: str | None, version: int) -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": str(version),
        },
    }
    if phase:
        job["status"] = {"state": {"phase": phase}}
    return job


def test_the_job_watch_tells_when_a_job_turns_pending() -> None:
    woken: list[int] = []
    store = _JobPhaseStore(Cache(), [lambda: woken.append(1)])
    store.replace_all("Job", [wire("old", "Pending", 1), wire("run", "Running", 2)])
    assert len(woken) == 1  # a job found Pending at the first listing may need room too
    store.upsert("Job", wire("a", None, 3))
    store.upsert("Job", wire("a", "Pending", 4))
    store.upsert("Job", wire("a", "Pending", 5))
    assert len(woken) == 2
    store.upsert("Job", wire("a", "Running", 6))
    store.upsert("Job", wire("a", "Pending", 7))
    assert len(woken) == 3
    store.remove("Job", wire("a", "Pending", 8))
    store.replace_all("Job", [wire("old", "Pending", 9), wire("a", "Pending", 10)])
    assert len(woken) == 4  # only "a", gone and back; "old" was Pending already
    assert store.upsert("Job", wire("b", "Pending", 11)) == "default/b"  # the cache is fed


class CountingKube:
    def __init__(self) -> None:
        self.lists = 0

    def list(self, *_: Any, **__: Any) -> tuple[list[dict[str, Any]], str]:
        self.lists += 1
        return [], "1"


def test_a_wake_up_brings_the_next_round_forward_after_the_minimum_spacing() -> None:
    kube, stop = CountingKube(), threading.Event()
    loop = ElasticLoop(
        None,  # type: ignore[arg-type]
        60.0,
        False,
        1,
        "nvidia.com/gpu",
        lambda: True,
        stop,
        registry=CollectorRegistry(),
        kube=kube,  # type: ignore[arg-type]
        min_spacing=0.05,
    )
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    try:
        wait_until("the first round", lambda: kube.lists == 1, timeout=5)
        time.sleep(0.1)
        assert kube.lists == 1  # the period is a minute
        started = time.monotonic()
        loop.wake()
        wait_until("the round the wake-up brings", lambda: kube.lists == 2, timeout=5)
        assert time.monotonic() - started < 2
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
