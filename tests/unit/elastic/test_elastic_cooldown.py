"""Resize cooldown: a task resized lately is not grown again and gives instances up last."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from elastic_builders import changes, fixed, gpu_nodes, job, pods_of_all, task

from controller.elastic.decide.plan import ElasticSettings, cooling_down, plan_elastic
from controller.elastic.decide.views import (
    RESIZED_AT_KEY,
    ElasticJobView,
    TaskView,
    job_view_from_wire,
    resized_at_annotation,
    resized_at_from_annotations,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
COOLDOWN = ElasticSettings(resize_cooldown=timedelta(seconds=10))


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def resized(view: TaskView, seconds_ago: float) -> TaskView:
    return replace(view, resized_at=ago(seconds_ago))


@pytest.mark.parametrize(
    ("resized_at", "cooldown", "cooling"),
    [
        pytest.param(None, 10, False, id="never resized"),
        pytest.param(ago(3), 10, True, id="within"),
        pytest.param(ago(10), 10, False, id="exactly the cooldown ago: out of it"),
        pytest.param(ago(30), 10, False, id="long ago"),
        pytest.param(ago(3), 0, False, id="off"),
        pytest.param(NOW + timedelta(seconds=5), 10, True, id="a clock ahead counts as just now"),
    ],
)
def test_cooling_down(resized_at: datetime | None, cooldown: float, cooling: bool) -> None:
    assert cooling_down(resized_at, NOW, timedelta(seconds=cooldown)) is cooling


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        pytest.param(None, {}, id="absent"),
        pytest.param('{"worker":"2026-01-01T11:59:57Z"}', {"worker": ago(3)}, id="one task"),
        pytest.param(
            '{"a":"2026-01-01T11:59:57.500000Z","b":"bad"}',
            {"a": ago(2.5)},
            id="a time that does not parse is left out",
        ),
        pytest.param('{"a":"2026-01-01T11:59:57"}', {}, id="a time without zone is left out"),
        pytest.param("not json", {}, id="not JSON"),
        pytest.param('["a"]', {}, id="not an object"),
    ],
)
def test_resized_at_from_annotations(raw: str | None, parsed: dict[str, datetime]) -> None:
    annotations = {} if raw is None else {RESIZED_AT_KEY: raw}
    assert resized_at_from_annotations(annotations) == parsed


def test_the_annotation_round_trips_and_keeps_other_tasks() -> None:
    value = resized_at_annotation({"ps": ago(60)}, "worker", ago(0.25))
    assert value == '{"ps":"2026-01-01T11:59:00Z","worker":"2026-01-01T11:59:59.750000Z"}'
    assert resized_at_from_annotations({RESIZED_AT_KEY: value}) == {
        "ps": ago(60),
        "worker": ago(0.25),
    }


def test_the_job_view_reads_each_task_s_resize_time() -> None:
    wire = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "a",
            "namespace": "default",
            "annotations": {RESIZED_AT_KEY: '{"worker":"2026-01-01T11:59:57Z"}'},
        },
        "spec": {
            "tasks": [
                {"name": "ps", "replicas": 1, "template": {"spec": {"containers": [{}]}}},
                {"name": "worker", "replicas": 2, "minReplicas": 1, "maxReplicas": 4},
            ]
        },
    }
    view = job_view_from_wire(wire)
    assert [t.resized_at for t in view.tasks] == [None, ago(3)]


def plan(jobs: list[ElasticJobView], gpus: int, settings: ElasticSettings = COOLDOWN) -> object:
    nodes = gpu_nodes(1, gpus)
    return changes(plan_elastic(jobs, nodes, pods_of_all(jobs), settings, NOW))


@pytest.mark.parametrize(
    ("jobs", "gpus", "want"),
    [
        pytest.param([job("a", resized(task(2, 1, 4), 3))], 4, {}, id="resized 3 s ago: not grown"),
        pytest.param(
            [job("a", resized(task(2, 1, 4), 30))],
            4,
            {"a/worker": (2, 4)},
            id="resized 30 s ago: grown",
        ),
        pytest.param(
            [job("a", resized(task(2, 1, 4), 3)), job("b", task(1, 1, 4))],
            5,
            {"b/worker": (1, 3)},
            id="what a cooling task would take goes to another",
        ),
        pytest.param(
            [
                job("a", resized(task(3, 1, 4), 3)),
                job("b", task(2, 1, 4)),
                job("c", fixed(1), phase="Pending"),
            ],
            5,
            {"b/worker": (2, 1)},
            id="the donor is the task out of its cooldown, though less fulfilled",
        ),
        pytest.param(
            [
                job("a", resized(task(3, 1, 4), 3)),
                job("b", task(2, 1, 4)),
                job("c", fixed(2), phase="Pending"),
            ],
            5,
            {"a/worker": (3, 2), "b/worker": (2, 1)},
            id="a cooling task gives when the others cannot give enough",
        ),
    ],
)
def test_cooldown_plans(jobs: list[ElasticJobView], gpus: int, want: object) -> None:
    assert plan(jobs, gpus, replace(COOLDOWN, max_step=16)) == want


def test_without_a_time_nothing_cools() -> None:
    jobs = [job("a", resized(task(2, 1, 4), 3))]
    nodes = gpu_nodes(1, 4)
    assert changes(plan_elastic(jobs, nodes, pods_of_all(jobs), COOLDOWN)) == {"a/worker": (2, 4)}
