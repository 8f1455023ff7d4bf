"""`controller.jobflow.decide.probes`: a step's dependency probes, read and judged."""

from __future__ import annotations

from typing import Any

import pytest

from controller.jobflow.decide.probes import (
    NetworkProbe,
    ProbeOutcome,
    network_probes,
    probe_problems,
    task_status_passes,
)


def target(replicas: int, counts: dict[str, int] | None) -> dict[str, Any]:
    job: dict[str, Any] = {"spec": {"tasks": [{"name": "ps", "replicas": replicas}]}}
    if counts is not None:
        job["status"] = {"taskStatusCount": {"ps": {"phase": counts}}}
    return job


@pytest.mark.parametrize(
    ("job", "task", "passes"),
    [
        (target(2, {"Running": 2}), "ps", True),
        (target(2, {"Running": 1, "Pending": 1}), "ps", False),
        (target(2, None), "ps", False),
        (target(0, {"Running": 1}), "ps", True),  # at least one pod, whatever the replicas
        (target(0, {}), "ps", False),
        (target(2, {"Running": 2}), "worker", False),  # no such task
    ],
)
def test_task_status_passes(job: dict[str, Any], task: str, passes: bool) -> None:
    assert task_status_passes(job, task, "Running") is passes


ENTRY = {
    "dependsOn": {
        "targets": ["a"],
        "probe": {
            "httpGetList": [
                {"taskName": "ps", "port": 8080, "httpHeader": {"name": "X", "value": "1"}},
            ],
            "tcpSocketList": [{"taskName": "ps", "port": 22}],
            "taskStatusList": [{"taskName": "ps", "phase": "Running"}],
        },
    }
}
HTTP = NetworkProbe("b", "f-a", "ps", 8080, path="/", header=("X", "1"))
TCP = NetworkProbe("b", "f-a", "ps", 22)


def test_network_probes_read_http_and_tcp() -> None:
    assert network_probes("b", ENTRY, "f-a") == [HTTP, TCP]
    assert HTTP.is_http and not TCP.is_http


@pytest.mark.parametrize(
    ("counts", "outcomes", "problems"),
    [
        ({"Running": 1}, {HTTP: ProbeOutcome(True), TCP: ProbeOutcome(True)}, []),
        (
            {"Running": 1},
            {HTTP: ProbeOutcome(False, "HTTP 503 from ps-0")},
            ["HTTP 503 from ps-0", "probe of task ps of job f-a not run yet"],
        ),
        (
            {"Pending": 1},
            {HTTP: ProbeOutcome(True), TCP: ProbeOutcome(True)},
            ["task ps of job f-a is not all Running"],
        ),
    ],
)
def test_probe_problems(
    counts: dict[str, int], outcomes: dict[NetworkProbe, ProbeOutcome], problems: list[str]
) -> None:
    targets = {"f-a": target(1, counts)}
    assert probe_problems("b", ENTRY, targets, outcomes) == problems
