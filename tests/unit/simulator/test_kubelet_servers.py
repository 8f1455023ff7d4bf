"""Pods of ReplicaSets, StatefulSets and DaemonSets serve until deleted; every other pod keeps
its script (runtime, then exit)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localcluster.simulator.kubelet import (
    Action,
    PodTimes,
    Script,
    next_step,
    runs_until_deleted,
    script_for_pod,
    start_status,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
RUNTIME = timedelta(seconds=5)


def owned_pod(
    kind: str | None,
    *,
    api_version: str = "apps/v1",
    controller: bool = True,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"namespace": "ns", "name": "p", "uid": "uid-1"}
    if kind is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": "owner",
                "uid": "owner-uid",
                "controller": controller,
            }
        ]
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "metadata": metadata,
        "spec": {
            "nodeName": "node-1",
            "restartPolicy": "Always",
            "containers": [{"name": "nginx", "image": "nginx:1.25"}],
        },
        "status": {"phase": "Pending"},
    }


@pytest.mark.parametrize("kind", ["ReplicaSet", "StatefulSet", "DaemonSet"])
def test_workload_pods_run_until_deleted(kind: str) -> None:
    pod = owned_pod(kind)
    assert runs_until_deleted(pod)
    assert script_for_pod(pod, RUNTIME) == (Script(None, 0), [])


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(owned_pod(None), id="no owner"),
        pytest.param(owned_pod("Job", api_version="batch.volcano.sh/v1alpha1"), id="volcano job"),
        pytest.param(owned_pod("Job", api_version="batch/v1"), id="batch job"),
        pytest.param(owned_pod("ReplicaSet", controller=False), id="not the controller"),
        pytest.param(owned_pod("ReplicaSet", api_version="example.com/v1"), id="another group"),
        pytest.param(
            owned_pod("ReplicaSet", annotations={"sim.vcjob.io/runtime": "10s"}), id="runtime"
        ),
        pytest.param(
            owned_pod("ReplicaSet", annotations={"sim.vcjob.io/fail-after": "1s"}),
            id="fail-after",
        ),
        pytest.param(
            owned_pod("ReplicaSet", annotations={"sim.vcjob.io/exit-code": "2"}), id="exit-code"
        ),
    ],
)
def test_other_pods_keep_their_script(pod: dict[str, Any]) -> None:
    assert not runs_until_deleted(pod)
    script, _ = script_for_pod(pod, RUNTIME)
    assert script.lifetime is not None


def test_a_scripted_workload_pod_follows_its_annotations() -> None:
    pod = owned_pod("DaemonSet", annotations={"sim.vcjob.io/runtime": "10s"})
    assert script_for_pod(pod, RUNTIME) == (Script(timedelta(seconds=10), 0), [])


def test_a_server_pod_starts_ready_and_never_exits() -> None:
    pod = owned_pod("ReplicaSet")
    script, _ = script_for_pod(pod, RUNTIME)
    start = next_step(pod, PodTimes(bound_seen=T0), script, "172.18.0.2", T0 + timedelta(seconds=1))
    assert start is not None
    assert start.action is Action.START
    assert start.status is not None
    ready = {c["type"]: c["status"] for c in start.status["conditions"]}
    assert ready["Ready"] == ready["ContainersReady"] == "True"
    assert [c["ready"] for c in start.status["containerStatuses"]] == [True]
    pod["status"] = start_status(pod, "172.18.0.2", T0)
    times = PodTimes(bound_seen=T0, started=T0)
    for later in (RUNTIME, RUNTIME * 10, timedelta(days=30)):
        assert next_step(pod, times, script, "172.18.0.2", T0 + later) is None


def test_a_server_pod_is_still_killed_when_deleted() -> None:
    pod = owned_pod("ReplicaSet")
    pod["status"] = start_status(pod, "172.18.0.2", T0)
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:30Z"
    script, _ = script_for_pod(pod, RUNTIME)
    step = next_step(pod, PodTimes(bound_seen=T0, started=T0), script, "h", T0)
    assert step is not None
    assert step.action is Action.KILL


def test_an_unowned_always_pod_still_restarts_after_its_runtime() -> None:
    pod = owned_pod(None)
    pod["status"] = start_status(pod, "172.18.0.2", T0)
    script, _ = script_for_pod(pod, RUNTIME)
    step = next_step(pod, PodTimes(bound_seen=T0, started=T0), script, "h", T0 + RUNTIME)
    assert step is not None
    assert step.action is Action.RESTART
