"""Pod phase, restart back-off and probe thresholds of pods that really run."""

from __future__ import annotations

import pytest

from localcluster.simulator.podstatus import (
    ContainerView,
    pod_phase,
    restart_delay,
    should_restart,
)
from localcluster.simulator.probes import ProbeTracker, probe_ports, resolve_port


def view(state: str, code: int = 0, restarts: int = 0) -> ContainerView:
    body = {"exitCode": code} if state == "terminated" else {}
    return ContainerView("c", "img", {state: body}, restart_count=restarts)


@pytest.mark.parametrize(
    ("policy", "views", "initialized", "phase"),
    [
        ("Always", [view("waiting")], True, "Pending"),
        ("Always", [view("running")], True, "Running"),
        ("Never", [view("terminated", 0)], True, "Succeeded"),
        ("Never", [view("terminated", 1)], True, "Failed"),
        ("OnFailure", [view("terminated", 1)], True, "Running"),
        ("Always", [view("terminated", 0)], True, "Running"),
        ("Always", [view("waiting", restarts=2)], True, "Running"),
        ("Never", [view("running")], False, "Pending"),
    ],
)
def test_pod_phase(policy: str, views: list[ContainerView], initialized: bool, phase: str) -> None:
    assert pod_phase(policy, views, initialized) == phase


def test_crash_loop_back_off() -> None:
    assert [restart_delay(n) for n in range(7)] == [0, 10, 20, 40, 80, 160, 300]


@pytest.mark.parametrize(
    ("policy", "code", "restart"),
    [("Always", 0, True), ("OnFailure", 0, False), ("OnFailure", 2, True), ("Never", 2, False)],
)
def test_should_restart(policy: str, code: int, restart: bool) -> None:
    assert should_restart(policy, code) is restart


def test_probe_thresholds() -> None:
    tracker = ProbeTracker(
        {"failureThreshold": 2, "periodSeconds": 1, "initialDelaySeconds": 5}, 0.0
    )
    assert not tracker.due(4.9) and tracker.due(5.0)
    assert tracker.record(False, 5.0) is None
    assert tracker.record(False, 6.0) is False
    assert tracker.record(True, 7.0) is True
    assert tracker.record(True, 8.0) is None


def test_probe_ports() -> None:
    containers = [{"ports": [{"name": "http", "containerPort": 8080}],
                   "readinessProbe": {"httpGet": {"port": "http"}},
                   "livenessProbe": {"tcpSocket": {"port": 9000}}}]  # fmt: skip
    assert probe_ports(containers) == {8080, 9000}
    assert resolve_port("8081", containers) == 8081
    with pytest.raises(ValueError, match="no container port"):
        resolve_port("metrics", containers)
