"""The loop's I/O against an in-memory API: JSON Patch with tests, Events, metrics, resilience."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import jsonpatch
import pytest
from prometheus_client import CollectorRegistry

from controller.elastic.decide.plan import ScaleDecision
from controller.elastic.decide.views import RESIZED_AT_KEY
from controller.elastic.shell import JSON_PATCH, NODES, ElasticLoop, replicas_patch
from kubeio.client import JOBS, ApiClient, Resource
from kubeio.errors import TransientError
from tests.support import FakeKube, wait_until

GPU = "nvidia.com/gpu"
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def elastic_job(name: str, replicas: int, phase: str = "Running") -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "tasks": [
                {"name": "ps", "replicas": 1, "template": {"spec": {"containers": [{}]}}},
                {
                    "name": "worker",
                    "replicas": replicas,
                    "minReplicas": 1,
                    "maxReplicas": 6,
                    "template": {"spec": {"containers": [{"resources": {"limits": {GPU: "1"}}}]}},
                },
            ]
        },
        "status": {"state": {"phase": phase}},
    }


def gpu_node(name: str, gpus: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {GPU: str(gpus)}}}


def api(objects: dict[Resource, list[dict[str, Any]]]) -> FakeKube:
    kube = FakeKube()
    for res, items in objects.items():
        for obj in items:
            kube.put(res, obj)
    return kube


def replicas(kube: FakeKube, name: str) -> int:
    return int(kube.stored(JOBS, "default", name)["spec"]["tasks"][1]["replicas"])


def patches(kube: FakeKube) -> list[tuple[str, str, Any, str]]:
    return [r for r in kube.requests if r[0] == "PATCH"]


def events(kube: FakeKube) -> list[dict[str, Any]]:
    return [o for (plural, _ns, _name), o in kube.objects.items() if plural == "events"]


def before_patch(kube: FakeKube, action: Callable[[], None]) -> None:
    kube.before.append(lambda verb, _plural, _name: action() if verb == "patch" else None)


def make_loop(
    kube: FakeKube,
    registry: CollectorRegistry,
    *,
    dry_run: bool = False,
    leader: bool | Callable[[], bool] = True,
    stop: threading.Event | None = None,
    resize_cooldown: float = 0.0,
    list_jobs: Callable[[], list[dict[str, Any]]] | None = None,
) -> ElasticLoop:
    return ElasticLoop(
        ApiClient(),
        0.01,
        dry_run,
        1,
        GPU,
        leader if callable(leader) else (lambda: leader),
        stop or threading.Event(),
        registry=registry,
        kube=kube,
        now=lambda: NOW,
        resize_cooldown=resize_cooldown,
        list_jobs=list_jobs,
    )


def value(registry: CollectorRegistry, name: str) -> float:
    sample = registry.get_sample_value(name)
    return 0.0 if sample is None else sample


@pytest.fixture
def kube() -> FakeKube:
    return api({JOBS: [elastic_job("a", 1)], NODES: [gpu_node("n1", 4), gpu_node("n2", 4)]})


def test_a_round_patches_replicas_behind_tests_and_records_an_event(kube: FakeKube) -> None:
    registry = CollectorRegistry()
    (decision,) = make_loop(kube, registry).run_round()
    assert (decision.from_replicas, decision.to_replicas) == (1, 6)
    _, path, body, content_type = patches(kube)[0]
    assert path == "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/a"
    assert content_type == JSON_PATCH
    assert body == [
        {"op": "test", "path": "/spec/tasks/1/name", "value": "worker"},
        {"op": "test", "path": "/spec/tasks/1/replicas", "value": 1},
        {"op": "replace", "path": "/spec/tasks/1/replicas", "value": 6},
        {
            "op": "add",
            "path": "/metadata/annotations",
            "value": {RESIZED_AT_KEY: '{"worker":"2026-01-01T12:00:00Z"}'},
        },
    ]
    assert replicas(kube, "a") == 6
    (event,) = events(kube)
    assert event["reason"] == "Scaled"
    assert event["type"] == "Normal"
    assert event["message"] == "Scaled task worker 1→6: 7 GPUs idle"
    assert event["source"] == {"component": "vcjob-elastic"}
    assert event["involvedObject"]["uid"] == "uid-a"
    assert event["involvedObject"]["kind"] == "Job"
    assert event["firstTimestamp"] == "2026-01-01T12:00:00Z"
    assert value(registry, "volcano_elastic_rounds_total") == 1
    assert value(registry, "volcano_elastic_scale_ups_total") == 1
    assert value(registry, "volcano_elastic_scale_downs_total") == 0
    # The score after the round (6 of 1..6 → 1.0) lands in the top bucket only.
    assert value(registry, "volcano_elastic_fulfillment_score_count") == 1
    assert registry.get_sample_value("volcano_elastic_fulfillment_score_bucket", {"le": "0.9"}) == 0
    assert registry.get_sample_value("volcano_elastic_fulfillment_score_bucket", {"le": "1.0"}) == 1


def test_the_next_round_changes_nothing(kube: FakeKube) -> None:
    loop = make_loop(kube, CollectorRegistry())
    loop.run_round()
    assert loop.run_round() == []
    assert len(patches(kube)) == 1


def test_a_concurrent_edit_is_never_overwritten(
    kube: FakeKube, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()

    def someone_scales_by_hand() -> None:
        kube.stored(JOBS, "default", "a")["spec"]["tasks"][1]["replicas"] = 2

    before_patch(kube, someone_scales_by_hand)
    with caplog.at_level(logging.WARNING, logger="controller.elastic"):
        make_loop(kube, registry).run_round()
    assert replicas(kube, "a") == 2
    assert events(kube) == []
    assert value(registry, "volcano_elastic_scale_ups_total") == 0
    assert [r.getMessage() for r in caplog.records] == ["elastic scale rejected"]


def test_dry_run_logs_without_patching(kube: FakeKube, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="controller.elastic"):
        decisions = make_loop(kube, CollectorRegistry(), dry_run=True).run_round()
    assert len(decisions) == 1
    assert patches(kube) == []
    assert events(kube) == []
    (record,) = [r for r in caplog.records if r.getMessage() == "elastic scale planned"]
    assert record.__dict__["to_replicas"] == 6
    assert record.__dict__["dry_run"] is True


def test_a_malformed_job_is_skipped_and_the_rest_scaled(kube: FakeKube) -> None:
    bad = elastic_job("bad", 1)
    bad["spec"]["tasks"][1]["replicas"] = "many"
    kube.put(JOBS, bad)
    decisions = make_loop(kube, CollectorRegistry()).run_round()
    assert [d.job for d in decisions] == ["a"]


def test_errors_in_a_round_are_logged_and_the_loop_goes_on(
    kube: FakeKube, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    stop = threading.Event()
    kube.failures[("list", "jobs")] = [TransientError("GET /apis/...: 500 InternalError")]
    before_patch(kube, stop.set)  # the second round patches; then stop
    loop = make_loop(kube, registry, stop=stop)
    thread = threading.Thread(target=loop.run)
    with caplog.at_level(logging.ERROR, logger="controller.elastic"):
        thread.start()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert replicas(kube, "a") == 6
    assert value(registry, "volcano_elastic_round_errors_total") == 1
    assert "elastic round failed" in [r.getMessage() for r in caplog.records]


def test_only_the_leader_scales(kube: FakeKube) -> None:
    stop = threading.Event()
    checks: list[bool] = []

    def follower() -> bool:
        checks.append(False)
        return False

    loop = make_loop(kube, CollectorRegistry(), leader=follower, stop=stop)
    thread = threading.Thread(target=loop.run)
    thread.start()
    # Several rounds came due and each asked whether this instance leads.
    wait_until("three rounds of a follower", lambda: len(checks) >= 3, timeout=10, interval=0.01)
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert patches(kube) == []


def test_the_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="period must be positive"):
        ElasticLoop(
            ApiClient(),
            0,
            False,
            1,
            GPU,
            lambda: True,
            threading.Event(),
            kube=FakeKube(),
        )


def test_without_elastic_jobs_a_round_lists_only_the_jobs() -> None:
    """The loop is on by default, so a cluster with no elastic job must pay next to nothing."""
    fixed = elastic_job("fixed", 1)
    for spec in fixed["spec"]["tasks"]:
        spec.pop("minReplicas", None)
        spec.pop("maxReplicas", None)
    kube = api({JOBS: [fixed], NODES: [gpu_node("n", 8)]})
    assert make_loop(kube, CollectorRegistry()).run_round() == []
    assert [plural for verb, plural, _ in kube.calls if verb == "list"] == ["jobs"]


def test_finished_elastic_jobs_read_from_a_cache_cost_no_request() -> None:
    """An idle cluster: the elastic jobs have finished, the Jobs come from the controller's
    watch-fed cache, so a round sends nothing to the API server."""
    jobs = [elastic_job("done", 2, phase="Completed"), elastic_job("failed", 2, phase="Failed")]
    kube = api({NODES: [gpu_node("n", 8)]})
    loop = make_loop(kube, CollectorRegistry(), list_jobs=lambda: jobs)
    assert loop.run_round() == []
    assert kube.calls == []


def test_a_running_elastic_job_from_the_cache_is_planned() -> None:
    jobs = [elastic_job("a", 1)]
    kube = api({JOBS: jobs, NODES: [gpu_node("n", 8)]})
    kube.calls.clear()
    loop = make_loop(
        kube, CollectorRegistry(), list_jobs=lambda: [kube.stored(JOBS, "default", "a")]
    )
    assert [(d.job, d.task) for d in loop.run_round()] == [("a", "worker")]
    assert [plural for verb, plural, _ in kube.calls if verb == "list"] == ["nodes", "pods"]


def test_the_resize_time_joins_the_annotations_a_job_already_has() -> None:
    job = elastic_job("a", 2)
    job["metadata"]["annotations"] = {"team": "x", RESIZED_AT_KEY: '{"ps":"2026-01-01T11:00:00Z"}'}
    decision = ScaleDecision("default", "a", "worker", 2, 3, "why")
    patch = replicas_patch(1, decision, job, NOW)
    assert patch[-1] == {
        "op": "add",
        "path": "/metadata/annotations/elastic.vcjob.volcano.sh~1resized-at",
        "value": '{"ps":"2026-01-01T11:00:00Z","worker":"2026-01-01T12:00:00Z"}',
    }
    patched = jsonpatch.JsonPatch(patch).apply(job)
    assert patched["metadata"]["annotations"]["team"] == "x"


@pytest.mark.parametrize(("resized_seconds_ago", "grows"), [(5, False), (30, True)])
def test_a_task_in_its_cooldown_is_not_grown(
    kube: FakeKube, resized_seconds_ago: int, grows: bool
) -> None:
    at = NOW.timestamp() - resized_seconds_ago
    stamp = datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")
    job = kube.stored(JOBS, "default", "a")
    job["metadata"]["annotations"] = {RESIZED_AT_KEY: f'{{"worker":"{stamp}"}}'}
    decisions = make_loop(kube, CollectorRegistry(), resize_cooldown=10.0).run_round()
    assert bool(decisions) is grows
    assert replicas(kube, "a") == (6 if grows else 1)


def test_two_resizes_of_one_job_in_a_round_keep_both_times() -> None:
    job = elastic_job("a", 1)
    job["spec"]["tasks"][0].update(minReplicas=1, maxReplicas=3)
    kube = api({JOBS: [job], NODES: [gpu_node("n1", 4)]})
    make_loop(kube, CollectorRegistry()).run_round()
    patched = kube.stored(JOBS, "default", "a")
    assert len(patches(kube)) == 2
    assert patched["metadata"]["annotations"][RESIZED_AT_KEY] == (
        '{"ps":"2026-01-01T12:00:00Z","worker":"2026-01-01T12:00:00Z"}'
    )
