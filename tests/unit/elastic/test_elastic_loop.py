"""The loop's I/O against an in-memory API: JSON Patch with tests, Events, metrics, resilience."""

from __future__ import annotations

import copy
import logging
import threading
from datetime import UTC, datetime
from typing import Any

import jsonpatch
import pytest
from prometheus_client import CollectorRegistry

from controller.elastic.decide.plan import ScaleDecision
from controller.elastic.decide.views import RESIZED_AT_KEY
from controller.elastic.shell import JSON_PATCH, ElasticLoop, replicas_patch
from kubeio.client import Kube, Resource
from kubeio.errors import PermanentError, TransientError

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


class FakeKube:
    """Lists, JSON Patches and creates over in-memory objects, with injectable failures."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.objects = objects
        self.patches: list[tuple[str, Any, str]] = []
        self.created: list[dict[str, Any]] = []
        self.list_failures: list[Exception] = []
        self.before_patch: list[Any] = []

    def list(self, res: Resource, **_: Any) -> tuple[list[dict[str, Any]], str]:
        if self.list_failures:
            raise self.list_failures.pop(0)
        return copy.deepcopy(self.objects.get(res.plural, [])), "1"

    def request(self, method: str, path: str, *, body: Any, content_type: str) -> Any:
        assert method == "PATCH"
        self.patches.append((path, body, content_type))
        for hook in self.before_patch:
            hook()
        name = path.rsplit("/", 1)[-1]
        jobs = self.objects["jobs"]
        index = next(i for i, j in enumerate(jobs) if j["metadata"]["name"] == name)
        try:
            jobs[index] = jsonpatch.JsonPatch(body).apply(jobs[index])
        except jsonpatch.JsonPatchException as exc:
            raise PermanentError(f"PATCH {path}: 422 Invalid: {exc}", 422, "Invalid") from exc
        return copy.deepcopy(jobs[index])

    def create(self, res: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        assert res.plural == "events"
        self.created.append(body)
        return body

    def replicas(self, name: str) -> int:
        job = next(j for j in self.objects["jobs"] if j["metadata"]["name"] == name)
        return int(job["spec"]["tasks"][1]["replicas"])


def make_loop(
    kube: FakeKube,
    registry: CollectorRegistry,
    *,
    dry_run: bool = False,
    leader: bool = True,
    stop: threading.Event | None = None,
    resize_cooldown: float = 0.0,
) -> ElasticLoop:
    return ElasticLoop(
        None,  # type: ignore[arg-type]
        0.01,
        dry_run,
        1,
        GPU,
        lambda: leader,
        stop or threading.Event(),
        registry=registry,
        kube=kube,  # type: ignore[arg-type]
        now=lambda: NOW,
        resize_cooldown=resize_cooldown,
    )


def value(registry: CollectorRegistry, name: str) -> float:
    sample = registry.get_sample_value(name)
    return 0.0 if sample is None else sample


@pytest.fixture
def kube() -> FakeKube:
    return FakeKube(
        {
            "jobs": [elastic_job("a", 1)],
            "nodes": [gpu_node("n1", 4), gpu_node("n2", 4)],
            "pods": [],
        }
    )


def test_a_round_patches_replicas_behind_tests_and_records_an_event(kube: FakeKube) -> None:
    registry = CollectorRegistry()
    (decision,) = make_loop(kube, registry).run_round()
    assert (decision.from_replicas, decision.to_replicas) == (1, 6)
    path, body, content_type = kube.patches[0]
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
    assert kube.replicas("a") == 6
    (event,) = kube.created
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
    assert len(kube.patches) == 1


def test_a_concurrent_edit_is_never_overwritten(
    kube: FakeKube, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()

    def someone_scales_by_hand() -> None:
        kube.objects["jobs"][0]["spec"]["tasks"][1]["replicas"] = 2

    kube.before_patch.append(someone_scales_by_hand)
    with caplog.at_level(logging.WARNING, logger="controller.elastic"):
        make_loop(kube, registry).run_round()
    assert kube.replicas("a") == 2
    assert kube.created == []
    assert value(registry, "volcano_elastic_scale_ups_total") == 0
    assert [r.getMessage() for r in caplog.records] == ["elastic scale rejected"]


def test_dry_run_logs_without_patching(kube: FakeKube, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="controller.elastic"):
        decisions = make_loop(kube, CollectorRegistry(), dry_run=True).run_round()
    assert len(decisions) == 1
    assert kube.patches == []
    assert kube.created == []
    (record,) = [r for r in caplog.records if r.getMessage() == "elastic scale planned"]
    assert record.__dict__["to_replicas"] == 6
    assert record.__dict__["dry_run"] is True


def test_a_malformed_job_is_skipped_and_the_rest_scaled(kube: FakeKube) -> None:
    bad = elastic_job("bad", 1)
    bad["spec"]["tasks"][1]["replicas"] = "many"
    kube.objects["jobs"].insert(0, bad)
    decisions = make_loop(kube, CollectorRegistry()).run_round()
    assert [d.job for d in decisions] == ["a"]


def test_errors_in_a_round_are_logged_and_the_loop_goes_on(
    kube: FakeKube, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    stop = threading.Event()
    kube.list_failures.append(TransientError("GET /apis/...: 500 InternalError"))
    kube.before_patch.append(stop.set)  # the second round patches; then stop
    loop = make_loop(kube, registry, stop=stop)
    thread = threading.Thread(target=loop.run)
    with caplog.at_level(logging.ERROR, logger="controller.elastic"):
        thread.start()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert kube.replicas("a") == 6
    assert value(registry, "volcano_elastic_round_errors_total") == 1
    assert "elastic round failed" in [r.getMessage() for r in caplog.records]


def test_only_the_leader_scales(kube: FakeKube) -> None:
    stop = threading.Event()
    loop = make_loop(kube, CollectorRegistry(), leader=False, stop=stop)
    thread = threading.Thread(target=loop.run)
    thread.start()
    stop.wait(0.1)
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert kube.patches == []


def test_the_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="period must be positive"):
        ElasticLoop(
            None,  # type: ignore[arg-type]
            0,
            False,
            1,
            GPU,
            lambda: True,
            threading.Event(),
            kube=Kube.__new__(Kube),
        )


def test_without_elastic_jobs_a_round_lists_only_the_jobs() -> None:
    """The loop is on by default, so a cluster with no elastic job must pay next to nothing."""
    fixed = elastic_job("fixed", 1)
    for spec in fixed["spec"]["tasks"]:
        spec.pop("minReplicas", None)
        spec.pop("maxReplicas", None)
    listed: list[str] = []

    class CountingKube(FakeKube):
        def list(self, res: Resource, **kw: Any) -> tuple[list[dict[str, Any]], str]:
            listed.append(res.plural)
            return super().list(res, **kw)

    kube = CountingKube({"jobs": [fixed], "nodes": [gpu_node("n", 8)], "pods": []})
    assert make_loop(kube, CollectorRegistry()).run_round() == []
    assert listed == ["jobs"]


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
    kube.objects["jobs"][0]["metadata"]["annotations"] = {RESIZED_AT_KEY: f'{{"worker":"{stamp}"}}'}
    decisions = make_loop(kube, CollectorRegistry(), resize_cooldown=10.0).run_round()
    assert bool(decisions) is grows
    assert kube.replicas("a") == (6 if grows else 1)


def test_two_resizes_of_one_job_in_a_round_keep_both_times() -> None:
    job = elastic_job("a", 1)
    job["spec"]["tasks"][0].update(minReplicas=1, maxReplicas=3)
    kube = FakeKube({"jobs": [job], "nodes": [gpu_node("n1", 4)], "pods": []})
    make_loop(kube, CollectorRegistry()).run_round()
    (patched,) = kube.objects["jobs"]
    assert len(kube.patches) == 2
    assert patched["metadata"]["annotations"][RESIZED_AT_KEY] == (
        '{"ps":"2026-01-01T12:00:00Z","worker":"2026-01-01T12:00:00Z"}'
    )
