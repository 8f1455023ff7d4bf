"""Work-based simulated training: annotations, speed-up, resize pauses and the end of the work."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localcluster.simulator.kubelet import Script, script_for_pod
from localcluster.simulator.work import (
    Progress,
    TaskKey,
    WorkSpec,
    advance,
    speedup,
    task_key,
    tick,
    work_spec,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
PAUSE = timedelta(seconds=3)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("annotations", "spec", "problems"),
    [
        pytest.param({}, None, 0, id="no work annotation: fixed runtime"),
        pytest.param({"sim.vcjob.io/work": "600"}, WorkSpec(600.0, 0.9, PAUSE), 0, id="defaults"),
        pytest.param(
            {
                "sim.vcjob.io/work": "120.5",
                "sim.vcjob.io/speedup-alpha": "1",
                "sim.vcjob.io/resize-pause": "500ms",
            },
            WorkSpec(120.5, 1.0, timedelta(milliseconds=500)),
            0,
            id="every knob",
        ),
        pytest.param({"sim.vcjob.io/work": "ten"}, None, 1, id="work not a number"),
        pytest.param({"sim.vcjob.io/work": "0"}, None, 1, id="work not positive"),
        pytest.param(
            {"sim.vcjob.io/work": "60", "sim.vcjob.io/speedup-alpha": "1.5"},
            WorkSpec(60.0, 0.9, PAUSE),
            1,
            id="alpha above 1: default",
        ),
        pytest.param(
            {"sim.vcjob.io/work": "60", "sim.vcjob.io/resize-pause": "soon"},
            WorkSpec(60.0, 0.9, PAUSE),
            1,
            id="bad pause: default",
        ),
    ],
)
def test_work_spec(annotations: dict[str, str], spec: WorkSpec | None, problems: int) -> None:
    parsed, messages = work_spec(annotations)
    assert parsed == spec
    assert len(messages) == problems
    assert all("sim.vcjob.io/" in message for message in messages)


@pytest.mark.parametrize(
    ("replicas", "alpha", "rate"),
    [(0, 0.9, 0.0), (1, 0.9, 1.0), (8, 1.0, 8.0), (8, 0.9, 8**0.9), (4, 0.5, 2.0)],
)
def test_speedup(replicas: int, alpha: float, rate: float) -> None:
    assert speedup(replicas, alpha) == pytest.approx(rate)


SPEC = WorkSpec(100.0, 1.0, PAUSE)


@pytest.mark.parametrize(
    ("steps", "done", "resizes"),
    [
        pytest.param([(0, 2), (10, 2)], 20.0, 0, id="2 replicas for 10 s"),
        pytest.param([(0, 0), (10, 2), (15, 2)], 10.0, 0, id="first start is no resize"),
        pytest.param([(0, 2), (10, 4), (12, 4)], 20.0, 1, id="grow: 2 s inside the pause"),
        pytest.param([(0, 2), (10, 4), (15, 4)], 28.0, 1, id="grow: 2 s after the pause at 4"),
        pytest.param([(0, 4), (10, 2), (20, 2)], 54.0, 1, id="shrink pauses too"),
        pytest.param([(0, 2), (10, 3), (11, 4), (20, 4)], 20.0 + 4 * 6, 2, id="pause restarts"),
        pytest.param([(0, 2), (10, 0), (20, 0)], 20.0, 0, id="nothing running: no progress"),
        pytest.param([(0, 2), (10, 0), (20, 2), (30, 2)], 34.0, 1, id="restart after a stop"),
        pytest.param([(0, 4), (100, 4)], 100.0, 0, id="never more than the work"),
    ],
)
def test_advance(steps: list[tuple[float, int]], done: float, resizes: int) -> None:
    progress = Progress(SPEC)
    for seconds, running in steps:
        progress = advance(progress, running, at(seconds))
    assert progress.done == pytest.approx(done)
    assert progress.resizes == resizes


def test_alpha_slows_larger_tasks() -> None:
    progress = advance(Progress(WorkSpec(1000.0, 0.9, PAUSE)), 8, T0)
    assert advance(progress, 8, at(10)).done == pytest.approx(10 * 8**0.9)


def pod(
    name: str,
    *,
    phase: str = "Running",
    job: str = "train",
    work: str | None = "100",
    deleting: bool = False,
) -> dict[str, Any]:
    annotations = {"sim.vcjob.io/work": work, "sim.vcjob.io/speedup-alpha": "1"} if work else {}
    metadata: dict[str, Any] = {
        "namespace": "ns",
        "name": name,
        "uid": f"uid-{name}",
        "labels": {"volcano.sh/job-name": job, "volcano.sh/task-spec": "worker"},
        "annotations": annotations,
        "ownerReferences": [{"controller": True, "uid": f"job-{job}", "kind": "Job"}],
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    return {"metadata": metadata, "spec": {"nodeName": "n1"}, "status": {"phase": phase}}


def test_task_key_needs_the_job_labels() -> None:
    assert task_key(pod("a")) == TaskKey("ns/train/worker/job-train")
    unlabeled = pod("a")
    unlabeled["metadata"]["labels"] = {}
    assert task_key(unlabeled) is None


def test_tick_counts_running_replicas_and_ends_the_task_when_done() -> None:
    pods = [pod("w0"), pod("w1"), pod("w2", phase="Pending"), pod("w3", deleting=True)]
    tasks, done = tick({}, pods, T0)
    key = TaskKey("ns/train/worker/job-train")
    assert tasks[key].replicas == 2 and done == frozenset()
    tasks, done = tick(tasks, pods, at(49))
    assert tasks[key].done == pytest.approx(98.0) and done == frozenset()
    tasks, done = tick(tasks, pods, at(50))
    assert tasks[key].finished
    assert done == {"uid-w0", "uid-w1"}
    # A pod of the finished task that starts later ends at once.
    started = [pod("w0", phase="Succeeded"), pod("w1", phase="Succeeded"), pod("w2")]
    tasks, done = tick(tasks, started, at(60))
    assert done == {"uid-w2"}


def test_tick_ignores_fixed_runtime_pods_and_forgets_tasks_without_pods() -> None:
    tasks, done = tick({}, [pod("a", work=None), pod("b", job="other")], T0)
    assert list(tasks) == [TaskKey("ns/other/worker/job-other")]
    tasks, done = tick(tasks, [], at(5))
    assert tasks == {} and done == frozenset()


def test_work_pods_run_until_the_work_model_ends_them() -> None:
    script, problems = script_for_pod(pod("a"), timedelta(seconds=5))
    assert script == Script(None, 0) and problems == []
    script, problems = script_for_pod(pod("a", work="none"), timedelta(seconds=5))
    assert script == Script(timedelta(seconds=5), 0) and len(problems) == 1
