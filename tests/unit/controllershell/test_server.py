"""Health and metrics endpoints, and workers waiting for the caches."""

from __future__ import annotations

import socket
import struct
import threading
import urllib.error
import urllib.request
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from controller.job.decide.model import Plan
from controller.job.shell.runner import Controller
from controller.server import HttpEndpoints
from controller.settings import Settings
from kubeio.client import JOBS, ApiClient
from kubeio.clock import ManualClock
from tests.support import FakeKube, wait_until


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        body = error.read().decode()
        error.close()
        return error.code, body


def test_probes_report_their_checks_and_metrics_are_served() -> None:
    state = {"healthy": True, "ready": False}
    registry = CollectorRegistry()
    Counter("volcano_pod_creates_total", "Pods created.", registry=registry).inc(3)
    Counter("volcano_pod_deletes_total", "Pods deleted.", registry=registry).inc()
    endpoints = HttpEndpoints(
        "127.0.0.1",
        0,
        0,
        lambda: (state["healthy"], "watches stopped: Pod"),
        lambda: (state["ready"], "caches not synced: Job"),
        registry,
    )
    endpoints.start()
    try:
        assert endpoints.health_port and endpoints.metrics_port
        assert endpoints.health_port != endpoints.metrics_port, "port 0 picks two free ports"
        assert get(endpoints.health_port, "/healthz") == (200, "ok\n")
        assert get(endpoints.health_port, "/readyz") == (503, "not ok: caches not synced: Job\n")
        state["ready"] = True
        assert get(endpoints.health_port, "/readyz")[0] == 200
        state["healthy"] = False
        assert get(endpoints.health_port, "/healthz")[0] == 503
        code, text = get(endpoints.metrics_port, "/metrics")
        assert code == 200
        assert "volcano_pod_creates_total 3.0" in text
        assert "volcano_pod_deletes_total 1.0" in text
        code, text = get(endpoints.metrics_port, "/metrics?name[]=volcano_pod_creates_total")
        assert code == 200
        assert "volcano_pod_creates_total 3.0" in text
        assert "volcano_pod_deletes_total" not in text
        assert get(endpoints.metrics_port, "/nothing")[0] == 404
    finally:
        endpoints.stop()


class CountedEvent(threading.Event):
    """A reflector's "synced" flag that counts how often it is read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def is_set(self) -> bool:
        self.reads += 1
        return super().is_set()


def test_workers_wait_until_every_cache_has_listed(fake_kube: FakeKube) -> None:
    seen: list[str] = []

    def planner(observed: Any, settings: Any) -> Plan:
        seen.append(observed.job["metadata"]["name"])
        return Plan()

    settings = Settings(leader_elect=False, health_port=None, metrics_port=None, workers=1)
    ctl = Controller(settings, ApiClient(), reconcile=planner, clock=ManualClock(), kube=fake_kube)
    job = fake_kube.put(
        JOBS, {"kind": "Job", "metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    )
    ctl.cache.upsert("Job", job)
    synced = CountedEvent()
    ctl.reflectors[0]._synced = synced
    worker = threading.Thread(target=ctl._work, args=("w",), daemon=True)
    worker.start()
    ctl.queue.add("ns/j")
    # The worker has looked at the unsynced cache several times with the key waiting for it.
    wait_until("the worker checking the caches", lambda: synced.reads >= 3, timeout=10)
    assert seen == [], "nothing is reconciled before the caches synced"
    assert len(ctl.queue) == 1
    for reflector in ctl.reflectors:
        reflector._synced.set()
    wait_until("the job reconciled", lambda: seen, timeout=5, interval=0.02)
    assert seen == ["j"]
    ctl.queue.shutdown()
    worker.join(timeout=5)
    ctl.applier.close()
    ctl.recorder.close()


def test_a_client_that_hangs_up_is_no_traceback(capfd: Any) -> None:
    """A kubelet probe that times out closes its connection before the answer; the server must
    not print a BrokenPipe traceback for it (the chart's controller log filled with them)."""
    hung_up = threading.Event()
    answered = threading.Event()
    checking = threading.Event()

    def slow_check() -> tuple[bool, str]:
        checking.set()
        hung_up.wait(10)
        return True, ""

    def ready() -> tuple[bool, str]:
        answered.set()
        return True, ""

    endpoints = HttpEndpoints("127.0.0.1", 0, None, slow_check, ready, CollectorRegistry())
    endpoints.start()
    try:
        assert endpoints.health_port is not None
        client = socket.create_connection(("127.0.0.1", endpoints.health_port), timeout=5)
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert checking.wait(10), "the request is read and the check is waiting"
        # Close with a reset, as a timed-out probe's kernel does once the pod is gone.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        hung_up.set()
        # The server still answers the next client, and has written the first answer by then.
        assert get(endpoints.health_port, "/readyz") == (200, "ok\n")
        assert answered.is_set()
        # Wait for the first request's thread to end: its write to the closed socket has failed.
        wait_until(
            "the first request's thread ended",
            lambda: not any("process_request_thread" in t.name for t in threading.enumerate()),
            10,
            interval=0.05,
        )
    finally:
        endpoints.stop()
    assert "Traceback" not in capfd.readouterr().err
