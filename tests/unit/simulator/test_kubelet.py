"""The simulated kubelet's steps for a bound pod, one rule per case."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localcluster.simulator.kubelet import (
    Action,
    PodTimes,
    Script,
    image_repository,
    next_step,
    pod_script,
    qos_class,
    start_status,
    status_retry_delay,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
RUNTIME = timedelta(seconds=5)


def bound_pod(
    *,
    annotations: dict[str, str] | None = None,
    restart_policy: str | None = "Never",
    deleting: bool = False,
    grace: int | None = None,
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {
            "namespace": "ns",
            "name": "p",
            "uid": "uid-1",
            "annotations": annotations or {},
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "main", "image": "busybox:1.36"}],
        },
        "status": {"phase": "Pending"},
    }
    if restart_policy:
        pod["spec"]["restartPolicy"] = restart_policy
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:30Z"
        if grace is not None:
            pod["metadata"]["deletionGracePeriodSeconds"] = grace
    return pod


def running(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"] = start_status(pod, "172.18.0.2", T0)
    return pod


SCRIPT_CASES = [
    pytest.param({}, Script(RUNTIME, 0), id="defaults: the simulator's runtime, exit 0"),
    pytest.param(
        {"sim.vcjob.io/runtime": "10s"}, Script(timedelta(seconds=10), 0), id="runtime annotation"
    ),
    pytest.param(
        {"sim.vcjob.io/exit-code": "3"}, Script(RUNTIME, 3), id="exit-code after the runtime"
    ),
    pytest.param(
        {"sim.vcjob.io/fail-after": "2s"},
        Script(timedelta(seconds=2), 1),
        id="fail-after fails with exit code 1",
    ),
    pytest.param(
        {"sim.vcjob.io/fail-after": "2s", "sim.vcjob.io/exit-code": "7"},
        Script(timedelta(seconds=2), 7),
        id="fail-after takes the exit code annotation",
    ),
    pytest.param(
        {"sim.vcjob.io/fail-after": "1s", "sim.vcjob.io/runtime": "9s"},
        Script(timedelta(seconds=1), 1),
        id="fail-after wins over runtime",
    ),
]


@pytest.mark.parametrize(("annotations", "expected"), SCRIPT_CASES)
def test_pod_script(annotations: dict[str, str], expected: Script) -> None:
    assert pod_script(annotations, RUNTIME) == (expected, [])


@pytest.mark.parametrize(
    ("annotations", "problem"),
    [
        pytest.param({"sim.vcjob.io/runtime": "soon"}, "sim.vcjob.io/runtime", id="bad runtime"),
        pytest.param({"sim.vcjob.io/exit-code": "x"}, "not an integer", id="bad exit code"),
        pytest.param({"sim.vcjob.io/exit-code": "300"}, "0..255", id="exit code out of range"),
    ],
)
def test_bad_annotations_are_reported_and_ignored(
    annotations: dict[str, str], problem: str
) -> None:
    _, problems = pod_script(annotations, RUNTIME)
    assert len(problems) == 1
    assert problem in problems[0]


def step(
    pod: dict[str, Any], now: datetime, times: PodTimes | None = None, **annotations: str
) -> Any:
    script, _ = pod_script(pod["metadata"]["annotations"], RUNTIME)
    return next_step(pod, times or PodTimes(bound_seen=T0, started=T0), script, "172.18.0.2", now)


def test_bound_pod_starts_after_half_a_second() -> None:
    pod = bound_pod()
    times = PodTimes(bound_seen=T0)
    assert step(pod, T0 + timedelta(seconds=0.2), times) is None
    started = step(pod, T0 + timedelta(seconds=0.6), times)
    assert started.action is Action.START
    status = started.status
    assert status["phase"] == "Running"
    assert status["podIP"].startswith("10.244.")
    assert status["hostIP"] == "172.18.0.2"
    assert {c["type"] for c in status["conditions"] if c["status"] == "True"} >= {
        "PodScheduled",
        "Initialized",
        "ContainersReady",
        "Ready",
    }
    (container,) = status["containerStatuses"]
    assert container["ready"] is True
    assert container["restartCount"] == 0
    assert "running" in container["state"]
    assert container["containerID"].startswith("containerd://")
    assert container["imageID"].startswith("docker.io/library/busybox@sha256:")


def test_running_pod_waits_for_its_runtime() -> None:
    assert step(running(bound_pod()), T0 + timedelta(seconds=4)) is None


def test_pod_succeeds_after_its_runtime() -> None:
    finished = step(running(bound_pod()), T0 + RUNTIME)
    assert finished.action is Action.FINISH
    assert finished.status["phase"] == "Succeeded"
    terminated = finished.status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")


def test_exit_code_annotation_fails_the_pod() -> None:
    pod = running(bound_pod(annotations={"sim.vcjob.io/exit-code": "3"}))
    finished = step(pod, T0 + RUNTIME)
    assert finished.status["phase"] == "Failed"
    terminated = finished.status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert finished.status["containerStatuses"][0]["ready"] is False


def test_fail_after_fails_early() -> None:
    pod = running(bound_pod(annotations={"sim.vcjob.io/fail-after": "2s"}))
    assert step(pod, T0 + timedelta(seconds=1)) is None
    finished = step(pod, T0 + timedelta(seconds=2))
    assert finished.status["phase"] == "Failed"
    assert finished.status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1


@pytest.mark.parametrize(
    ("policy", "exit_code", "action"),
    [
        pytest.param("Never", "3", Action.FINISH, id="Never: a failure ends the pod"),
        pytest.param("OnFailure", "3", Action.RESTART, id="OnFailure: a failure restarts"),
        pytest.param("OnFailure", "0", Action.FINISH, id="OnFailure: success ends the pod"),
        pytest.param("Always", "0", Action.RESTART, id="Always: even success restarts"),
        pytest.param(None, "0", Action.RESTART, id="no policy means Always"),
    ],
)
def test_restart_policy(policy: str | None, exit_code: str, action: Action) -> None:
    pod = running(
        bound_pod(annotations={"sim.vcjob.io/exit-code": exit_code}, restart_policy=policy)
    )
    assert step(pod, T0 + RUNTIME).action is action


def test_restart_counts_and_keeps_the_last_state() -> None:
    pod = running(
        bound_pod(annotations={"sim.vcjob.io/exit-code": "2"}, restart_policy="OnFailure")
    )
    restarted = step(pod, T0 + RUNTIME)
    (container,) = restarted.status["containerStatuses"]
    assert restarted.status["phase"] == "Running"
    assert container["restartCount"] == 1
    assert container["lastState"]["terminated"]["exitCode"] == 2
    assert "running" in container["state"]


def test_deleted_running_pod_is_killed_then_removed_after_capped_grace() -> None:
    pod = running(bound_pod(deleting=True, grace=30))
    times = PodTimes(bound_seen=T0, started=T0, terminating_seen=T0 + timedelta(seconds=1))
    killed = step(pod, T0 + timedelta(seconds=1), times)
    assert killed.action is Action.KILL
    terminated = killed.status["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 137
    pod["status"] = killed.status
    assert step(pod, T0 + timedelta(seconds=1.2), times) is None
    assert step(pod, T0 + timedelta(seconds=1.5), times).action is Action.DELETE


def test_deleted_pod_with_zero_grace_goes_at_once() -> None:
    pod = bound_pod(deleting=True, grace=0)
    times = PodTimes(bound_seen=T0, terminating_seen=T0)
    assert step(pod, T0, times).action is Action.DELETE


def test_finished_pod_keeps_its_exit_code_when_deleted() -> None:
    pod = running(bound_pod())
    pod["status"] = step(pod, T0 + RUNTIME).status
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T12:01:00Z"
    times = PodTimes(bound_seen=T0, started=T0, terminating_seen=T0 + RUNTIME)
    assert step(pod, T0 + RUNTIME, times) is None
    assert step(pod, T0 + RUNTIME + timedelta(seconds=1), times).action is Action.DELETE


def test_finished_pod_stays_finished() -> None:
    pod = running(bound_pod())
    pod["status"] = step(pod, T0 + RUNTIME).status
    assert step(pod, T0 + timedelta(hours=1)) is None


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        pytest.param({}, "BestEffort", id="no requests"),
        pytest.param({"requests": {"cpu": "1"}}, "Burstable", id="requests only"),
        pytest.param(
            {"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed", id="limits for cpu and memory"
        ),
        pytest.param(
            {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
            "BestEffort",
            id="extended resources do not count",
        ),
        pytest.param(
            {
                "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
            },
            "Guaranteed",
            id="a gpu beside equal cpu and memory",
        ),
        pytest.param({"requests": {"cpu": "0"}}, "BestEffort", id="zero amounts do not count"),
        pytest.param(
            {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "Burstable",
            id="requests below limits",
        ),
        pytest.param(
            {
                "requests": {"cpu": "1000m", "memory": "1024Mi"},
                "limits": {"cpu": "1", "memory": "1Gi"},
            },
            "Guaranteed",
            id="equal amounts written differently",
        ),
        pytest.param({"limits": {"cpu": "1"}}, "Burstable", id="a cpu limit alone"),
    ],
)
def test_qos_class(resources: dict[str, Any], qos: str) -> None:
    assert qos_class({"spec": {"containers": [{"name": "c", "resources": resources}]}}) == qos


GUARANTEED = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


@pytest.mark.parametrize(
    ("pod", "qos"),
    [
        pytest.param(
            {
                "spec": {"containers": [{"name": "c", "resources": GUARANTEED}]},
                "status": {"qosClass": "BestEffort"},
            },
            "BestEffort",
            id="the class kube-apiserver stored wins",
        ),
        pytest.param(
            {
                "spec": {
                    "containers": [{"name": "c", "resources": GUARANTEED}],
                    "initContainers": [{"name": "i"}],
                }
            },
            "Burstable",
            id="an init container without limits",
        ),
        pytest.param(
            {"spec": {"resources": GUARANTEED, "containers": [{"name": "c"}]}},
            "Guaranteed",
            id="pod-level resources",
        ),
        pytest.param(
            {
                "spec": {
                    "resources": {"requests": {"cpu": "1"}},
                    "containers": [{"name": "c", "resources": GUARANTEED}],
                }
            },
            "Burstable",
            id="pod-level resources stand for the containers'",
        ),
    ],
)
def test_qos_class_of_a_pod(pod: dict[str, Any], qos: str) -> None:
    assert qos_class(pod) == qos


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        pytest.param("busybox", "docker.io/library/busybox", id="official image"),
        pytest.param("busybox:1.36", "docker.io/library/busybox", id="tag dropped"),
        pytest.param("bitnami/spark:3", "docker.io/bitnami/spark", id="user image"),
        pytest.param("ghcr.io/org/img:v1", "ghcr.io/org/img", id="registry kept"),
        pytest.param("localhost:5000/img:v1", "localhost:5000/img", id="registry with port"),
    ],
)
def test_image_repository(image: str, repository: str) -> None:
    assert image_repository(image) == repository


@pytest.mark.parametrize(
    ("previous", "delay"),
    [(None, 1.0), (1.0, 2.0), (8.0, 16.0), (16.0, 30.0), (30.0, 30.0)],
)
def test_a_refused_status_report_waits_longer_each_time(
    previous: float | None, delay: float
) -> None:
    assert status_retry_delay(previous) == delay
