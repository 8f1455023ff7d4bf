"""Applying a Plan: the contract's order, idempotent creates, the difference-2 guard (the
Job read again before creating), one status write."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.job.decide.model import EventRecord, ObjectRef, Plan
from controller.job.shell.apply import Applier, JobGoneError, job_gone_reason, status_guards_creates
from controller.job.shell.cache import Cache
from controller.metrics import Metrics
from kubeio.client import CONFIGMAPS, JOBS, PODGROUPS, PODS
from kubeio.errors import (
    ConflictError,
    PartialProgressError,
    PermanentError,
    TransientError,
)
from kubeio.events import EventRecorder


def job_body(uid: str = "job-uid") -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": uid},
        "spec": {"tasks": []},
    }


def pod_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": {"volcano.sh/job-name": "j"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.fixture
def setup(fake_kube: Any) -> Iterator[tuple[Applier, Any, Cache, Metrics, dict[str, Any]]]:
    cache = Cache()
    metrics = Metrics()
    applier = Applier(fake_kube, cache, EventRecorder(fake_kube, "test"), metrics)
    job = fake_kube.put(JOBS, job_body())
    cache.upsert("Job", job)
    yield applier, fake_kube, cache, metrics, job
    applier.close()


def status(phase: str) -> dict[str, Any]:
    return {"state": {"phase": phase}}


def test_steps_run_in_the_contract_order(setup: Any) -> None:
    applier, kube, _cache, metrics, job = setup
    kube.put(PODS, pod_body("j-w-1"))
    kube.objects[("commands", "ns", "j-abortjob-abcde")] = {
        "metadata": {"name": "j-abortjob-abcde"}
    }
    plan = Plan(
        annotate_out_of_sync=[ObjectRef("v1", "Pod", "ns", "j-w-1")],
        delete=[ObjectRef("v1", "Pod", "ns", "j-w-1")],
        create=[pod_body("j-w-0")],
        status=status("Running"),
        events=[EventRecord("Normal", "Scaled", "task w scaled")],
        delete_commands=["j-abortjob-abcde"],
        delete_job=True,
    )
    applier.apply(job, plan)
    verbs = [(verb, plural) for verb, plural, _ in kube.calls]
    assert verbs == [
        ("patch", "pods"),
        ("delete", "pods"),
        ("status", "jobs"),  # with the cached resourceVersion: the difference-2 guard
        ("create", "events"),
        ("create", "pods"),
        ("delete", "commands"),
        ("delete", "jobs"),
    ]
    assert metrics.pod_creates._value.get() == 1
    assert metrics.pod_deletes._value.get() == 1


def test_a_scale_up_updates_the_plugin_objects_before_it_creates_pods(setup: Any) -> None:
    """As Volcano's controller: a pod of a scale-up reads the new hosts (its environment is
    fixed when it starts); the PodGroup's update waits until the pods are created, so a
    conflict on it holds no pod back."""
    applier, kube, _cache, _metrics, job = setup
    hosts = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "j-svc", "namespace": "ns"},
    }
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"minMember": 2},
    }
    kube.put(CONFIGMAPS, {**hosts, "data": {"VC_W_NUM": "1"}})
    kube.put(PODGROUPS, group)
    plan = Plan(
        create=[pod_body("j-w-1")],
        update=[group, {**hosts, "data": {"VC_W_NUM": "2"}}],
        guard_uid="job-uid",
    )
    applier.apply(job, plan)
    verbs = [(verb, plural) for verb, plural, _ in kube.calls if verb != "put"]
    assert verbs == [
        ("replace", "configmaps"),
        ("get", "jobs"),
        ("create", "pods"),
        ("replace", "podgroups"),
    ]


def test_creates_without_a_status_write_read_the_job_first(setup: Any) -> None:
    applier, kube, _cache, _metrics, job = setup
    pg = {"kind": "PodGroup", "metadata": {"name": "j", "namespace": "ns"}, "spec": {}}
    applier.apply(job, Plan(create=[pg, pod_body("j-w-0")], guard_uid="job-uid"))
    verbs = [(verb, plural) for verb, plural, _ in kube.calls]
    assert verbs == [("get", "jobs"), ("create", "podgroups"), ("create", "pods")]


def test_a_job_spec_patch_keeps_the_status_after_the_creates(setup: Any) -> None:
    applier, kube, _cache, _metrics, job = setup
    plan = Plan(create=[pod_body("j-w-0")], job_spec_patch={"spec": {"minAvailable": 1}})
    plan.status = status("Pending")
    applier.apply(job, plan)
    verbs = [(verb, plural) for verb, plural, _ in kube.calls]
    assert verbs == [("get", "jobs"), ("create", "pods"), ("patch", "jobs"), ("status", "jobs")]


def _plan(**fields: Any) -> Plan:
    return Plan(**fields)


@pytest.mark.parametrize(
    ("plan", "guard_uid", "expected"),
    [
        pytest.param(_plan(create=[{}], status={}), None, True, id="creates and a status"),
        pytest.param(_plan(create=[{}], status={}), "job-uid", True, id="guarding this job"),
        pytest.param(_plan(create=[{}], status={}), "other", False, id="guarding another uid"),
        pytest.param(_plan(create=[{}]), None, False, id="no status write"),
        pytest.param(_plan(status={}), None, False, id="nothing created"),
        pytest.param(
            _plan(create=[{}], status={}, job_spec_patch={"spec": {}}), None, False, id="spec patch"
        ),
    ],
)
def test_status_guards_creates(plan: Plan, guard_uid: str | None, expected: bool) -> None:
    plan.guard_uid = guard_uid
    assert status_guards_creates(job_body(), plan) is expected


@pytest.mark.parametrize(
    ("fresh", "gone"),
    [
        pytest.param(job_body(), None, id="the same job"),
        pytest.param(None, "no longer exists", id="deleted"),
        pytest.param(job_body(uid="another"), "was replaced", id="replaced"),
        pytest.param(
            {"metadata": {"uid": "job-uid", "deletionTimestamp": "2026-01-01T00:00:00Z"}},
            "being deleted",
            id="being deleted",
        ),
    ],
)
def test_job_gone_reason(fresh: dict[str, Any] | None, gone: str | None) -> None:
    reason = job_gone_reason(job_body(), fresh, "job-uid")
    assert (reason is None) if gone is None else (reason is not None and gone in reason)


def test_created_and_written_objects_are_readable_from_the_cache_at_once(setup: Any) -> None:
    applier, _kube, cache, _metrics, job = setup
    applier.apply(job, Plan(create=[pod_body("j-w-0")], status=status("Pending")))
    assert [p["metadata"]["name"] for p in cache.view("ns/j").pods] == ["j-w-0"]
    cached_job = cache.job("ns/j")
    assert cached_job is not None
    assert cached_job["status"] == status("Pending")


def test_a_deleted_command_is_gone_from_the_cache_before_the_watch_says_so(setup: Any) -> None:
    """Otherwise the next reconcile executes it again (a RestartJob would cost two retries)."""
    applier, kube, cache, _metrics, job = setup
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "j-restartjob-abcde", "namespace": "ns", "uid": "c1"},
        "action": "RestartJob",
        "target": {"kind": "Job", "name": "j", "uid": "job-uid"},
    }
    kube.objects[("commands", "ns", "j-restartjob-abcde")] = command
    cache.upsert("Command", command)
    assert [c["metadata"]["name"] for c in cache.view("ns/j").commands] == ["j-restartjob-abcde"]
    applier.apply(job, Plan(delete_commands=["j-restartjob-abcde"]))
    assert cache.view("ns/j").commands == []
    cache.upsert("Command", command)  # a late watch event of the deleted command
    assert cache.view("ns/j").commands == []


def test_a_deleted_secret_is_gone_from_the_cache_though_no_watch_reports_it(setup: Any) -> None:
    """Secrets are not watched: without read-your-deletes the ssh Secret of a finished job
    stays in the cache and every round deletes it again (a 404 loop)."""
    applier, kube, cache, _metrics, job = setup
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "j-ssh", "namespace": "ns", "labels": {"volcano.sh/job-name": "j"}},
    }
    cache.store_written("Secret", secret)
    assert [c["metadata"]["name"] for c in cache.view("ns/j").children] == ["j-ssh"]
    applier.apply(job, Plan(delete=[ObjectRef("v1", "Secret", "ns", "j-ssh")]))
    assert ("delete", "secrets", "j-ssh") in kube.calls
    assert cache.view("ns/j").children == []


def test_a_deleted_pod_waits_for_its_watch_to_leave_the_cache(setup: Any) -> None:
    """A pod's disappearance is recorded from the watch, with why it went (a PodEdge)."""
    applier, kube, cache, _metrics, job = setup
    pod = kube.put(PODS, pod_body("j-w-0"))
    cache.upsert("Pod", pod)
    applier.apply(job, Plan(delete=[ObjectRef("v1", "Pod", "ns", "j-w-0")]))
    assert [p["metadata"]["name"] for p in cache.view("ns/j").pods] == ["j-w-0"]
    assert cache.take_edges("ns/j") == []


def test_already_existing_pods_count_as_created(setup: Any) -> None:
    applier, kube, _cache, metrics, job = setup
    kube.put(PODS, pod_body("j-w-0"))
    result = applier.apply(
        job, Plan(create=[pod_body("j-w-0"), pod_body("j-w-1")], status=status("Pending"))
    )
    assert result.status_written
    assert kube.names("pods") == ["j-w-0", "j-w-1"]
    assert metrics.pod_creates._value.get() == 1


@pytest.mark.parametrize(
    "change",
    [
        pytest.param("deleted", id="job deleted"),
        pytest.param("replaced", id="job recreated with another uid"),
        pytest.param("terminating", id="job has a deletionTimestamp"),
    ],
)
@pytest.mark.parametrize("with_status", [True, False], ids=["status written first", "no status"])
def test_nothing_is_created_for_a_job_that_is_gone(
    setup: Any, change: str, with_status: bool
) -> None:
    applier, kube, _cache, _metrics, job = setup
    key = ("jobs", "ns", "j")
    if change == "deleted":
        del kube.objects[key]
    elif change == "replaced":
        kube.objects[key]["metadata"]["uid"] = "another-uid"
        kube._bump(kube.objects[key])  # a new object: a new resourceVersion
    else:
        kube.objects[key]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        kube._bump(kube.objects[key])
    plan = Plan(
        create=[pod_body("j-w-0")],
        status=status("Pending") if with_status else None,
        events=[EventRecord("Normal", "X", "y")],
        guard_uid="job-uid",
    )
    with pytest.raises(JobGoneError):
        applier.apply(job, plan)
    assert kube.names("pods") == []
    assert "status" not in (kube.objects.get(key) or {})
    assert _events(kube) == []


def test_a_failed_create_still_tries_the_others_and_skips_the_status(setup: Any) -> None:
    applier, kube, _cache, _metrics, job = setup
    kube.failures[("create", "pods")] = [TransientError("boom", 500)]
    plan = Plan(
        create=[pod_body(f"j-w-{i}") for i in range(3)],
        update=[{"kind": "PodGroup", "metadata": {"name": "j", "namespace": "ns"}, "spec": {}}],
        guard_uid="job-uid",
    )
    plan.job_spec_patch = {"spec": {"minAvailable": 1}}
    plan.status = status("Pending")
    with pytest.raises(PartialProgressError) as raised:
        applier.apply(job, plan)
    assert raised.value.progress == 2, "two pods got through: retry soon, without growing backoff"
    assert len(kube.names("pods")) == 2
    assert not [call for call in kube.calls if call[0] == "replace"]
    assert ("status", "jobs", "j") not in kube.calls
    assert ("patch", "jobs", "j") not in kube.calls
    assert any(o.get("reason") == "FailedCreatePod" for o in _events(kube))


def test_a_status_written_first_stays_when_a_create_fails(setup: Any) -> None:
    """The decision is persisted with its events; the failed create is retried from it."""
    applier, kube, _cache, _metrics, job = setup
    kube.failures[("create", "pods")] = [TransientError("boom", 500)]
    plan = Plan(
        create=[pod_body(f"j-w-{i}") for i in range(3)],
        status=status("Pending"),
        events=[EventRecord("Normal", "Pending", "the job was accepted")],
    )
    with pytest.raises(PartialProgressError):
        applier.apply(job, plan)
    assert kube.objects[("jobs", "ns", "j")]["status"] == status("Pending")
    assert [o.get("reason") for o in _events(kube)] == ["Pending", "FailedCreatePod"]


def test_a_status_conflict_refreshes_the_cache_and_asks_for_a_replan(setup: Any) -> None:
    applier, kube, cache, _metrics, job = setup
    kube.objects[("jobs", "ns", "j")]["spec"]["minAvailable"] = 2
    kube._bump(kube.objects[("jobs", "ns", "j")])  # somebody else wrote the job
    with pytest.raises(ConflictError):
        applier.apply(job, Plan(status=status("Running"), events=[EventRecord("Normal", "X", "y")]))
    refreshed = cache.job("ns/j")
    assert refreshed is not None
    assert refreshed["spec"]["minAvailable"] == 2
    assert _events(kube) == [], "events only after the status write succeeded"


def test_deleting_what_is_already_gone_succeeds(setup: Any) -> None:
    applier, kube, _cache, _metrics, job = setup
    applier.apply(
        job, Plan(delete=[ObjectRef("v1", "Pod", "ns", "j-w-9")], status=status("Pending"))
    )
    assert ("status", "jobs", "j") in kube.calls


def test_a_uid_precondition_protects_a_recreated_object(setup: Any) -> None:
    applier, kube, _cache, _metrics, job = setup
    kube.put(
        PODS, {**pod_body("j-w-0"), "metadata": {**pod_body("j-w-0")["metadata"], "uid": "new"}}
    )
    applier.apply(job, Plan(delete=[ObjectRef("v1", "Pod", "ns", "j-w-0", uid="old")]))
    assert kube.names("pods") == ["j-w-0"]


def test_the_job_spec_patch_comes_before_the_status_write(setup: Any) -> None:
    applier, kube, _cache, _metrics, job = setup
    patch = {"spec": {"volumes": [{"mountPath": "/d", "volumeClaimName": "j-pvc-abcde"}]}}
    result = applier.apply(job, Plan(job_spec_patch=patch, status=status("Pending")))
    assert result.job["spec"]["volumes"][0]["volumeClaimName"] == "j-pvc-abcde"
    assert kube.objects[("jobs", "ns", "j")]["status"] == status("Pending")


def _events(kube: Any) -> list[dict[str, Any]]:
    return [o for (plural, _ns, _n), o in kube.objects.items() if plural == "events"]


def test_a_conflict_on_a_delete_whose_object_is_still_there_is_retried(setup: Any) -> None:
    """A 409 on a delete with a UID precondition: the object is read again; while the same
    object still holds the name the delete did not happen, and the plan must be retried."""
    applier, kube, _cache, _metrics, job = setup
    pg = kube.put(PODGROUPS, {"metadata": {"name": "j-pg", "namespace": "ns", "uid": "pg-1"}})
    kube.failures[("delete", "podgroups")] = [ConflictError("409 injected", 409, "Conflict")]
    ref = ObjectRef("scheduling.volcano.sh/v1beta1", "PodGroup", "ns", "j-pg", "pg-1")
    with pytest.raises(ConflictError):
        applier.apply(job, Plan(delete=[ref]))
    assert kube.names("podgroups") == ["j-pg"]
    assert pg["metadata"]["uid"] == "pg-1"
    applier.apply(job, Plan(delete=[ref]))
    assert kube.names("podgroups") == []


def test_a_conflict_on_a_delete_of_a_replaced_object_is_done(setup: Any) -> None:
    applier, kube, _cache, _metrics, job = setup
    kube.put(PODGROUPS, {"metadata": {"name": "j-pg", "namespace": "ns", "uid": "pg-2"}})
    ref = ObjectRef("scheduling.volcano.sh/v1beta1", "PodGroup", "ns", "j-pg", "pg-1")
    applier.apply(job, Plan(delete=[ref], status=status("Restarting")))
    assert kube.names("podgroups") == ["j-pg"]  # somebody else's object is left alone


def test_a_permanent_error_is_not_wrapped_as_partial_progress(setup: Any) -> None:
    applier, kube, _cache, _metrics, job = setup
    kube.failures[("create", "pods")] = [
        PermanentError("422 injected", 422, "Invalid"),
    ]
    with pytest.raises(PermanentError):
        applier.apply(job, Plan(create=[pod_body("j-w-0"), pod_body("j-w-1")]))


def test_a_crd_that_drops_vcjobs_status_fields_is_reported_once(
    setup: Any, caplog: pytest.LogCaptureFixture
) -> None:
    applier, kube, _cache, metrics, job = setup
    replace_status = kube.replace_status

    def like_volcanos_crd(resource: Any, namespace: str, body: dict[str, Any]) -> Any:
        body = {**body, "status": {k: v for k, v in body["status"].items() if k != "attempts"}}
        return replace_status(resource, namespace, body)

    kube.replace_status = like_volcanos_crd
    for phase in ("Pending", "Running"):
        job = applier.apply(job, Plan(status={**status(phase), "attempts": [{"index": 0}]})).job
    warnings = [r for r in caplog.records if "drops vcjob's Job status fields" in r.getMessage()]
    assert len(warnings) == 1
    assert "(attempts)" in warnings[0].getMessage()
    assert metrics.pruned_status_fields._value.get() == 1
