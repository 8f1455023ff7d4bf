"""Kubernetes' own gang (`controller.job.decide.nativegang`): the Workload and PodGroup of a job
kube-scheduler places, the pods joined to it, and what the planner does with them."""

from __future__ import annotations

from typing import Any

import pytest
from builders import job, observe, pod_group_of, pod_of

from controller.job.decide import activesync, blocked, draft, nativegang
from controller.job.decide.model import PlanSettings
from controller.job.decide.podgen import joins_native_gang
from shared.models import Job

SERVED = PlanSettings(native_gang_served=True)


def native_job(*, min_available: int | None = None, **tasks: int) -> dict[str, Any]:
    builder = job().scheduler("default-scheduler")
    for name, replicas in (tasks or {"w": 2}).items():
        builder = builder.task(name, replicas)
    if min_available is not None:
        builder = builder.min_available(min_available)
    return builder.phase("Pending").build()


def native_pod_group(j: dict[str, Any], min_count: int, **status: Any) -> dict[str, Any]:
    group = nativegang.build_pod_group(Job.from_wire(j), {})
    group["metadata"]["uid"] = "pg-uid"
    group["metadata"]["resourceVersion"] = "7"
    group["spec"]["schedulingPolicy"] = {"gang": {"minCount": min_count}}
    if status:
        group["status"] = status
    return group


@pytest.mark.parametrize(
    ("scheduler", "native", "applies"),
    [
        pytest.param("default-scheduler", {"default-scheduler"}, True, id="kube-scheduler"),
        pytest.param("volcano", {"default-scheduler"}, False, id="volcano"),
        pytest.param(None, {"default-scheduler"}, False, id="unset-is-volcano"),
        pytest.param("gangs", {"gangs"}, True, id="another-profile"),
        pytest.param("default-scheduler", set(), False, id="turned-off"),
    ],
)
def test_applies(scheduler: str | None, native: set[str], applies: bool) -> None:
    builder = job().task("w", 1)
    if scheduler is not None:
        builder = builder.scheduler(scheduler)
    assert nativegang.applies(Job.from_wire(builder.build()), frozenset(native)) is applies


def test_workload_and_pod_group_express_the_gang() -> None:
    j = job().scheduler("default-scheduler").task("w", 3).min_available(2).build()
    j["spec"]["priorityClassName"] = "high"
    parsed = Job.from_wire(j)
    workload = nativegang.build_workload(parsed, {"high": 1000})
    group = nativegang.build_pod_group(parsed, {"high": 1000})
    name = f"j-{j['metadata']['uid']}"
    assert workload["apiVersion"] == group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert workload["metadata"]["name"] == group["metadata"]["name"] == name
    assert workload["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert workload["spec"] == {
        "controllerRef": {"apiGroup": "batch.volcano.sh", "kind": "Job", "name": "j"},
        "podGroupTemplates": [
            {
                "name": "gang",
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "priorityClassName": "high",
            }
        ],
    }
    assert group["spec"] == {
        "workloadRef": {"workloadName": name, "templateName": "gang"},
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "priorityClassName": "high",
    }


def test_an_unknown_priority_class_is_left_out() -> None:
    j = job().scheduler("default-scheduler").task("w", 1).build()
    j["spec"]["priorityClassName"] = "missing"
    group = nativegang.build_pod_group(Job.from_wire(j), {})
    assert "priorityClassName" not in group["spec"]


@pytest.mark.parametrize(
    ("tasks", "min_available", "topology", "expected"),
    [
        pytest.param({"w": 2}, None, False, [], id="one-gang"),
        pytest.param({"ps": 1, "w": 4}, None, False, [], id="every-pod"),
        pytest.param(
            {"ps": 1, "w": 4}, "w", False, ["per-task minAvailable (tasks w)"], id="per-task"
        ),
        pytest.param({"w": 2}, None, True, ["networkTopology"], id="topology"),
    ],
)
def test_unexpressed(
    tasks: dict[str, int], min_available: str | None, topology: bool, expected: list[str]
) -> None:
    builder = job().scheduler("default-scheduler")
    for name, replicas in tasks.items():
        builder = builder.task(name, replicas, min_available=1 if name == min_available else None)
    j = builder.build()
    if topology:
        j["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    assert nativegang.unexpressed(Job.from_wire(j)) == expected


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param([], None, id="not-looked-at"),
        pytest.param(
            [
                {
                    "type": "PodGroupInitiallyScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/2 nodes are available: 2 Insufficient cpu.",
                }
            ],
            nativegang.GangState(
                False, "Unschedulable", "0/2 nodes are available: 2 Insufficient cpu."
            ),
            id="unschedulable",
        ),
        pytest.param(
            [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"}],
            nativegang.GangState(True, "Scheduled", ""),
            id="scheduled",
        ),
    ],
)
def test_gang_state(conditions: list[dict[str, str]], expected: Any) -> None:
    assert nativegang.gang_state({"status": {"conditions": conditions}}) == expected


@pytest.mark.parametrize(
    ("template_spec", "joins"),
    [
        pytest.param({}, True, id="the-jobs-scheduler"),
        pytest.param({"schedulerName": "default-scheduler"}, True, id="same-scheduler"),
        pytest.param({"schedulerName": "volcano"}, False, id="another-scheduler"),
        pytest.param({"schedulingGroup": {"podGroupName": "mine"}}, False, id="set-by-the-user"),
    ],
)
def test_joins_native_gang(template_spec: dict[str, Any], joins: bool) -> None:
    j = Job.from_wire(job().scheduler("default-scheduler").task("w", 1).build())
    assert joins_native_gang(template_spec, j) is joins


def test_the_first_round_creates_the_gang_before_the_pods() -> None:
    j = native_job()
    r, d = draft.start(observe(j, [], pod_group=None), SERVED)
    activesync.sync(r, d)
    created = [(o["apiVersion"], o["kind"]) for o in d.plan.create]
    assert created[:3] == [
        ("scheduling.volcano.sh/v1beta1", "PodGroup"),
        ("scheduling.k8s.io/v1beta1", "Workload"),
        ("scheduling.k8s.io/v1beta1", "PodGroup"),
    ]
    pods = [o for o in d.plan.create if o["kind"] == "Pod"]
    assert [p["spec"]["schedulingGroup"] for p in pods] == [
        {"podGroupName": f"j-{j['metadata']['uid']}"}
    ] * 2


def test_an_existing_gang_is_not_created_again_and_follows_a_scale() -> None:
    j = native_job(w=3)
    r, d = draft.start(
        observe(
            j,
            [pod_of(j, "w", 0)],
            pod_group=pod_group_of(j, "Inqueue"),
            native_pod_group=native_pod_group(j, 2),
        ),
        SERVED,
    )
    activesync.sync(r, d)
    assert not [o for o in d.plan.create if o["kind"] in ("Workload",)]
    assert [(o["kind"], o["spec"]["schedulingPolicy"]) for o in d.plan.update] == [
        ("PodGroup", {"gang": {"minCount": 3}})
    ]


def test_without_the_api_the_job_runs_and_says_why() -> None:
    j = native_job()
    r, d = draft.start(observe(j, [], pod_group=None), PlanSettings(native_gang_served=False))
    activesync.sync(r, d)
    assert {o["kind"] for o in d.plan.create} == {"PodGroup", "Pod"}
    assert all("schedulingGroup" not in o["spec"] for o in d.plan.create if o["kind"] == "Pod")
    assert [(e.reason, e.type) for e in d.plan.events] == [
        (nativegang.UNAVAILABLE_REASON, "Warning")
    ]


def test_a_partial_gang_is_reported_once() -> None:
    j = job().scheduler("default-scheduler").task("ps", 1).task("w", 4, min_available=2)
    wire = j.phase("Pending").build()
    r, d = draft.start(observe(wire, [], pod_group=None), SERVED)
    activesync.sync(r, d)
    assert [e.reason for e in d.plan.events] == [nativegang.PARTIAL_REASON]
    assert "per-task minAvailable (tasks w)" in d.plan.events[0].message


def test_volcano_jobs_get_no_native_gang() -> None:
    j = job().task("w", 1).phase("Pending").build()
    r, d = draft.start(observe(j, [], pod_group=pod_group_of(j, "Inqueue")), SERVED)
    activesync.sync(r, d)
    assert all(o["apiVersion"] != "scheduling.k8s.io/v1beta1" for o in d.plan.create)
    assert all("schedulingGroup" not in o["spec"] for o in d.plan.create if o["kind"] == "Pod")


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(
            {
                "conditions": [
                    {
                        "type": "PodGroupInitiallyScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "minCount (3) cannot be satisfied",
                    }
                ]
            },
            blocked.Blocked("Unschedulable", "kube-scheduler: minCount (3) cannot be satisfied"),
            id="kube-scheduler-cannot-place-it",
        ),
        pytest.param(
            {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]},
            None,
            id="placed",
        ),
        pytest.param({}, None, id="not-looked-at"),
    ],
)
def test_a_job_is_blocked_by_kube_schedulers_verdict(
    status: dict[str, Any], expected: blocked.Blocked | None
) -> None:
    found = blocked.blocked_reason(
        missing_pvcs=[],
        queue=blocked.QueueFacts("default"),
        pod_group=None,
        pods=[],
        native_pod_group={"status": status},
    )
    assert found == expected
