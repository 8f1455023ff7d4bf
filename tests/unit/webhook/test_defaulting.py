"""Defaults on CREATE (admission.md "Defaults (CREATE)"), one case per rule."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.job.defaulting import default_job, defaulted_view, diff, mutation_patch

CONTAINERS = {"containers": [{"name": "c", "image": "busybox"}]}


def task(name: str | None = "worker", replicas: int = 2, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"replicas": replicas, "template": {"spec": copy.deepcopy(CONTAINERS)}}
    if name is not None:
        out["name"] = name
    out.update(fields)
    return out


def job(*tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"tasks": list(tasks) or [task()], **spec},
    }


def spec_of(raw: dict[str, Any], scheduler: str = "volcano") -> dict[str, Any]:
    spec: dict[str, Any] = default_job(raw, scheduler)["spec"]
    return spec


@pytest.mark.parametrize(
    ("raw", "field", "expected"),
    [
        pytest.param(job(), "queue", "default", id="1-queue-defaults-to-default"),
        pytest.param(job(queue="gpu"), "queue", "gpu", id="1-queue-kept"),
        pytest.param(job(queue=""), "queue", "default", id="1-empty-queue-is-absent"),
        pytest.param(job(), "schedulerName", "kube-batch", id="2-scheduler-from-flag"),
        pytest.param(job(schedulerName="mine"), "schedulerName", "mine", id="2-scheduler-kept"),
        pytest.param(job(), "maxRetry", 3, id="3-maxRetry-defaults-to-3"),
        pytest.param(job(maxRetry=0), "maxRetry", 0, id="3-explicit-zero-maxRetry-kept"),
        pytest.param(job(maxRetry=7), "maxRetry", 7, id="3-maxRetry-kept"),
        pytest.param(job(task(replicas=2), task("ps", 1)), "minAvailable", 3, id="5-sum-of-tasks"),
        pytest.param(
            job(task(replicas=4, minAvailable=1), task("ps", 1)),
            "minAvailable",
            2,
            id="5-sum-uses-task-minAvailable",
        ),
        pytest.param(job(minAvailable=0), "minAvailable", 2, id="5-explicit-zero-is-absent"),
        pytest.param(job(minAvailable=1), "minAvailable", 1, id="5-minAvailable-kept"),
    ],
)
def test_job_defaults(raw: dict[str, Any], field: str, expected: Any) -> None:
    assert spec_of(raw, "kube-batch")[field] == expected


@pytest.mark.parametrize(
    ("raw_task", "field", "expected"),
    [
        pytest.param(task(name=None), "name", "default0", id="4-name-default-i"),
        pytest.param(task(name=""), "name", "default0", id="4-empty-name-is-absent"),
        pytest.param(task(replicas=5), "minAvailable", 5, id="4-minAvailable-is-replicas"),
        pytest.param(task(minAvailable=1), "minAvailable", 1, id="4-minAvailable-kept"),
        pytest.param(task(minAvailable=0), "minAvailable", 0, id="4-zero-minAvailable-kept"),
        pytest.param(task(), "maxRetry", 3, id="4-task-maxRetry-3"),
        pytest.param(task(maxRetry=0), "maxRetry", 0, id="4-task-explicit-zero-maxRetry-kept"),
        pytest.param(
            task(replicas=4, minReplicas=2, maxReplicas=8),
            "minAvailable",
            2,
            id="4-elastic-task-minAvailable-is-minReplicas",
        ),
    ],
)
def test_task_defaults(raw_task: dict[str, Any], field: str, expected: Any) -> None:
    assert spec_of(job(raw_task))["tasks"][0][field] == expected


def test_task_names_count_their_position() -> None:
    tasks = spec_of(job(task("a"), task(None), task(None)))["tasks"]
    assert [t["name"] for t in tasks] == ["a", "default1", "default2"]


@pytest.mark.parametrize(
    ("pod_spec", "expected"),
    [
        pytest.param({"hostNetwork": True}, "ClusterFirstWithHostNet", id="host-network"),
        pytest.param({"hostNetwork": True, "dnsPolicy": "Default"}, "Default", id="kept"),
        pytest.param({"hostNetwork": False}, None, id="no-host-network"),
        pytest.param({}, None, id="absent"),
    ],
)
def test_dns_policy_with_host_network(pod_spec: dict[str, Any], expected: str | None) -> None:
    t = task()
    t["template"]["spec"].update(pod_spec)
    assert spec_of(job(t))["tasks"][0]["template"]["spec"].get("dnsPolicy") == expected


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        pytest.param({"tensorflow": []}, {"tensorflow": [], "svc": []}, id="tensorflow-adds-svc"),
        pytest.param({"pytorch": []}, {"pytorch": [], "svc": []}, id="pytorch-adds-svc"),
        pytest.param({"mpi": []}, {"mpi": [], "svc": [], "ssh": []}, id="mpi-adds-svc-and-ssh"),
        pytest.param(
            {"mpi": [], "svc": ["--disable-network-policy"]},
            {"mpi": [], "svc": ["--disable-network-policy"], "ssh": []},
            id="existing-svc-kept",
        ),
        pytest.param({"env": []}, {"env": []}, id="env-alone"),
        pytest.param({}, {}, id="empty"),
    ],
)
def test_plugin_defaults(plugins: dict[str, Any], expected: dict[str, Any]) -> None:
    assert spec_of(job(plugins=plugins))["plugins"] == expected


def test_raw_object_is_not_modified() -> None:
    raw = job(task(name=None))
    before = copy.deepcopy(raw)
    default_job(raw, "volcano")
    assert raw == before


def test_defaulting_is_idempotent() -> None:
    raw = job(task(name=None), task("ps", 1), plugins={"mpi": []})
    once = default_job(raw, "volcano")
    assert default_job(once, "volcano") == once
    assert mutation_patch(once, "volcano") == []


def test_patch_adds_only_the_missing_fields_and_keeps_unknown_ones() -> None:
    t = task(futureTaskField={"x": 1})
    t["template"]["spec"]["containers"][0]["unknownContainerField"] = True
    raw = job(t, queue="q", schedulerName="s", maxRetry=1, minAvailable=1, extraSpecField=[1])
    patch = mutation_patch(raw, "volcano")
    assert patch == [
        {"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 2},
        {"op": "add", "path": "/spec/tasks/0/maxRetry", "value": 3},
    ]
    patched = jsonpatch.apply_patch(raw, patch)
    assert patched["spec"]["extraSpecField"] == [1]
    assert patched["spec"]["tasks"][0]["futureTaskField"] == {"x": 1}
    assert patched["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["unknownContainerField"]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({}, id="no-spec"),
        pytest.param({"spec": "x"}, id="spec-not-object"),
        pytest.param({"spec": {"tasks": "x"}}, id="tasks-not-list"),
        pytest.param({"spec": {"tasks": ["x", 3]}}, id="tasks-not-objects"),
        pytest.param({"spec": {"tasks": [{"replicas": "2"}]}}, id="replicas-not-int"),
        pytest.param({"spec": {"plugins": ["mpi"]}}, id="plugins-not-map"),
        pytest.param({"spec": {"tasks": [{"template": {"spec": "x"}}]}}, id="pod-spec-garbage"),
    ],
)
def test_garbage_is_left_for_the_validator(raw: dict[str, Any]) -> None:
    defaulted = default_job(raw, "volcano")
    assert default_job(defaulted, "volcano") == defaulted


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(
    old=st.dictionaries(st.text(max_size=3), json_values, max_size=4),
    new=st.dictionaries(st.text(max_size=3), json_values, max_size=4),
)
def test_diff_is_a_patch_from_old_to_new(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert jsonpatch.apply_patch(old, diff(old, new)) == new


@settings(max_examples=100, deadline=None)
@given(extra=st.dictionaries(st.sampled_from(["maxRetry", "queue", "x"]), json_values, max_size=2))
def test_diff_equals_make_patch_on_defaulting(extra: dict[str, Any]) -> None:
    raw = job(task(name=None), task("ps", 1), **extra)
    defaulted = default_job(raw, "volcano")
    assert diff(raw, defaulted) == jsonpatch.make_patch(raw, defaulted).patch


def test_defaulted_view_has_the_same_values_and_leaves_raw_alone() -> None:
    t = task(name=None)
    t["template"]["spec"]["hostNetwork"] = True
    raw = job(t, task("ps", 1), plugins={"mpi": []})
    before = copy.deepcopy(raw)
    assert defaulted_view(raw, "volcano") == default_job(raw, "volcano")
    assert raw == before
