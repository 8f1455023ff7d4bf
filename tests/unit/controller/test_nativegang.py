"""Kubernetes' own gang (`controller.job.decide.nativegang`): the Workload and PodGroup of a job
kube-scheduler places, the pods joined to it, and what the planner does with them."""

from __future__ import annotations

from typing import Any

import pytest
from builders import job, observe, pod_group_of, pod_of

from controller.job.decide import activesync, blocked, nativegang, steps
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
    seen, draft = steps.start(observe(j, [], pod_group=None), SERVED)
    draft = activesync.sync(seen, draft)
    created = [(o["apiVersion"], o["kind"]) for o in draft.effects.create]
    assert created[:3] == [
        ("scheduling.volcano.sh/v1beta1", "PodGroup"),
        ("scheduling.k8s.io/v1beta1", "Workload"),
        ("scheduling.k8s.io/v1beta1", "PodGroup"),
    ]
    pods = [o for o in draft.effects.create if o["kind"] == "Pod"]
    assert [p["spec"]["schedulingGroup"] for p in pods] == [
        {"podGroupName": f"j-{j['metadata']['uid']}"}
    ] * 2


def test_an_existing_gang_is_not_created_again_and_follows_a_scale() -> None:
    j = native_job(w=3)
    seen, draft = steps.start(
        observe(
            j,
            [pod_of(j, "w", 0)],
            pod_group=pod_group_of(j, "Inqueue"),
            native_pod_groups=[native_pod_group(j, 2)],
        ),
        SERVED,
    )
    draft = activesync.sync(seen, draft)
    assert not [o for o in draft.effects.create if o["kind"] in ("Workload",)]
    assert [(o["kind"], o["spec"]["schedulingPolicy"]) for o in draft.effects.update] == [
        ("PodGroup", {"gang": {"minCount": 3}})
    ]


def test_without_the_api_the_job_runs_and_says_why() -> None:
    j = native_job()
    seen, draft = steps.start(
        observe(j, [], pod_group=None), PlanSettings(native_gang_served=False)
    )
    draft = activesync.sync(seen, draft)
    assert {o["kind"] for o in draft.effects.create} == {"PodGroup", "Pod"}
    assert all(
        "schedulingGroup" not in o["spec"] for o in draft.effects.create if o["kind"] == "Pod"
    )
    assert [(e.reason, e.type) for e in draft.effects.events] == [
        (nativegang.UNAVAILABLE_REASON, "Warning")
    ]


def test_a_partial_gang_is_reported_once() -> None:
    j = job().scheduler("default-scheduler").task("ps", 1).task("w", 4, min_available=2)
    wire = j.phase("Pending").build()
    seen, draft = steps.start(observe(wire, [], pod_group=None), SERVED)
    draft = activesync.sync(seen, draft)
    assert [e.reason for e in draft.effects.events] == [nativegang.PARTIAL_REASON]
    assert "per-task minAvailable (tasks w)" in draft.effects.events[0].message


def test_volcano_jobs_get_no_native_gang() -> None:
    j = job().task("w", 1).phase("Pending").build()
    seen, draft = steps.start(observe(j, [], pod_group=pod_group_of(j, "Inqueue")), SERVED)
    draft = activesync.sync(seen, draft)
    assert all(o["apiVersion"] != "scheduling.k8s.io/v1beta1" for o in draft.effects.create)
    assert all(
        "schedulingGroup" not in o["spec"] for o in draft.effects.create if o["kind"] == "Pod"
    )


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
        native_pod_groups=[{"status": status}],
    )
    assert found == expected


# --- per-task minAvailable: a CompositePodGroup over a PodGroup per task ----------------------

COMPOSITE = PlanSettings(native_gang_served=True, composite_gang_served=True)


def tasks_job(*tasks: tuple[str, int, int | None], min_available: int | None = None) -> Job:
    builder = job().scheduler("default-scheduler")
    for name, replicas, task_min in tasks:
        builder = builder.task(name, replicas, min_available=task_min)
    if min_available is not None:
        builder = builder.min_available(min_available)
    return Job.from_wire(builder.phase("Pending").build())


@pytest.mark.parametrize(
    ("tasks", "min_available", "expected"),
    [
        pytest.param([("w", 4, 2)], None, [], id="one-task-is-one-gang"),
        pytest.param([("ps", 1, None), ("w", 4, None)], None, [], id="every-pod-is-one-gang"),
        pytest.param(
            [("ps", 1, 1), ("w", 4, 2)], None, [("ps", 1), ("w", 2)], id="per-task"
        ),
        pytest.param(
            [("ps", 1, 1), ("w", 4, 2)], 5, [("ps", 1), ("w", 2)], id="job-above-the-tasks"
        ),
        # Volcano checks the tasks' minimums only when the job's is at least their sum.
        pytest.param([("ps", 1, 1), ("w", 4, 2)], 2, [], id="job-below-the-tasks"),
        pytest.param(
            [("ps", 1, 1), ("w", 4, 2), ("eval", 2, 0)], None, [("ps", 1), ("w", 2)],
            id="a-task-needing-no-pod-gets-no-group",
        ),
    ],
)  # fmt: skip
def test_task_gangs(
    tasks: list[tuple[str, int, int | None]],
    min_available: int | None,
    expected: list[tuple[str, int]],
) -> None:
    j = tasks_job(*tasks, min_available=min_available)
    found = nativegang.task_gangs(j)
    assert [(g.task, g.min_count) for g in found] == expected
    assert all(g.pod_group == f"j-{j.uid}-{g.task}" for g in found)


def test_a_task_of_another_scheduler_gets_no_group() -> None:
    j = job().scheduler("default-scheduler").task("ps", 1, min_available=1)
    wire = j.task("w", 4, min_available=2).build()
    wire["spec"]["tasks"][1]["template"]["spec"]["schedulerName"] = "volcano"
    assert [g.task for g in nativegang.task_gangs(Job.from_wire(wire))] == ["ps"]


def test_the_composite_objects_express_each_tasks_gang() -> None:
    wire = job().scheduler("default-scheduler").task("ps", 1, min_available=1)
    wire = wire.task("w", 4, min_available=2).build()
    wire["spec"]["priorityClassName"] = "high"
    j = Job.from_wire(wire)
    gangs = nativegang.task_gangs(j)
    known = {"high": 1000}
    name = f"j-{j.uid}"
    workload = nativegang.build_composite_workload(j, gangs, known)
    assert workload["metadata"]["name"] == name
    assert workload["spec"] == {
        "controllerRef": {"apiGroup": "batch.volcano.sh", "kind": "Job", "name": "j"},
        "compositePodGroupTemplates": [
            {
                "name": "gang",
                "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                "priorityClassName": "high",
                "podGroupTemplates": [
                    {
                        "name": "ps",
                        "schedulingPolicy": {"gang": {"minCount": 1}},
                        "priorityClassName": "high",
                    },
                    {
                        "name": "w",
                        "schedulingPolicy": {"gang": {"minCount": 2}},
                        "priorityClassName": "high",
                    },
                ],
            }
        ],
    }
    composite = nativegang.build_composite_pod_group(j, gangs, known)
    assert (composite["apiVersion"], composite["kind"]) == (
        "scheduling.k8s.io/v1alpha3",
        "CompositePodGroup",
    )
    assert composite["metadata"]["name"] == name
    assert composite["metadata"]["ownerReferences"][0]["uid"] == j.uid
    assert composite["spec"] == {
        "workloadRef": {"workloadName": name, "templateName": "gang"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        "priorityClassName": "high",
    }
    worker = nativegang.build_task_pod_group(j, gangs[1], known)
    assert worker["metadata"]["name"] == f"{name}-w"
    assert worker["spec"] == {
        "parentCompositePodGroupName": name,
        "workloadRef": {"workloadName": name, "templateName": "w"},
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "priorityClassName": "high",
    }


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        pytest.param(["ps", "w"], "gang", id="gang"),
        pytest.param(["gang", "w"], "gang-1", id="a-task-named-gang"),
        pytest.param(["gang", "gang-1"], "gang-2", id="both-taken"),
    ],
)
def test_the_composite_template_name_never_repeats_a_task(tasks: list[str], expected: str) -> None:
    builder = job().scheduler("default-scheduler")
    for name in tasks:
        builder = builder.task(name, 2, min_available=1)
    assert nativegang.composite_template_name(Job.from_wire(builder.build())) == expected


@pytest.mark.parametrize(
    ("tasks", "min_available", "expected"),
    [
        pytest.param([("ps", 1, 1), ("w", 4, 2)], None, [], id="the-tasks-say-it-all"),
        pytest.param(
            [("ps", 1, 1), ("w", 4, 2)], 5, ["minAvailable 5 beyond the tasks' own (3 pods)"],
            id="the-job-asks-more",
        ),
    ],
)  # fmt: skip
def test_unexpressed_by_a_composite_gang(
    tasks: list[tuple[str, int, int | None]], min_available: int | None, expected: list[str]
) -> None:
    j = tasks_job(*tasks, min_available=min_available)
    assert nativegang.unexpressed(j, nativegang.task_gangs(j)) == expected


def test_the_first_round_creates_the_composite_gang_before_the_pods() -> None:
    wire = job().scheduler("default-scheduler").task("ps", 1, min_available=1)
    wire = wire.task("w", 4, min_available=2).phase("Pending").build()
    seen, draft = steps.start(observe(wire, [], pod_group=None), COMPOSITE)
    draft = activesync.sync(seen, draft)
    name = f"j-{wire['metadata']['uid']}"
    created = [(o["kind"], o["metadata"]["name"]) for o in draft.effects.create]
    assert created[:5] == [
        ("PodGroup", name),
        ("Workload", name),
        ("CompositePodGroup", name),
        ("PodGroup", f"{name}-ps"),
        ("PodGroup", f"{name}-w"),
    ]
    assert {kind for kind, _ in created[5:]} == {"Pod"}
    joined = {
        o["metadata"]["name"]: o["spec"]["schedulingGroup"]["podGroupName"]
        for o in draft.effects.create
        if o["kind"] == "Pod"
    }
    assert joined == {
        "j-ps-0": f"{name}-ps",
        **{f"j-w-{i}": f"{name}-w" for i in range(4)},
    }
    assert draft.effects.events == ()


def test_a_task_needing_no_pod_is_placed_one_by_one() -> None:
    wire = job().scheduler("default-scheduler").task("ps", 1, min_available=1)
    wire = wire.task("w", 2, min_available=2).task("eval", 1, min_available=0)
    seen, draft = steps.start(observe(wire.phase("Pending").build(), [], pod_group=None), COMPOSITE)
    draft = activesync.sync(seen, draft)
    pods = {o["metadata"]["name"]: o["spec"] for o in draft.effects.create if o["kind"] == "Pod"}
    assert "schedulingGroup" not in pods["j-eval-0"]
    assert pods["j-ps-0"]["schedulingGroup"] == {"podGroupName": f"j-{seen.job.uid}-ps"}


def composite_state(wire: dict[str, Any], **min_counts: int) -> dict[str, Any]:
    """The objects of a composite gang as the cache holds them, the tasks' at `min_counts`."""
    j = Job.from_wire(wire)
    gangs = nativegang.child_gangs(j)
    groups = []
    for g in gangs:
        group = nativegang.build_task_pod_group(j, g, {})
        group["metadata"]["resourceVersion"] = "7"
        group["spec"]["schedulingPolicy"] = {"gang": {"minCount": min_counts[g.task]}}
        groups.append(group)
    return {
        "native_composite_pod_group": nativegang.build_composite_pod_group(j, gangs, {}),
        "native_pod_groups": groups,
    }


def test_a_scale_rewrites_only_that_tasks_group() -> None:
    wire = job().scheduler("default-scheduler").task("ps", 1, min_available=1)
    wire = wire.task("w", 5, min_available=3).phase("Running").build()
    seen, draft = steps.start(
        observe(wire, [pod_of(wire, "ps", 0)], pod_group=pod_group_of(wire, "Running"),
                **composite_state(wire, ps=1, w=2)),
        COMPOSITE,
    )  # fmt: skip
    draft = activesync.sync(seen, draft)
    assert not [o for o in draft.effects.create if o["kind"] != "Pod"]
    assert [
        (o["metadata"]["name"], o["spec"]["schedulingPolicy"]) for o in draft.effects.update
    ] == [(f"j-{seen.job.uid}-w", {"gang": {"minCount": 3}})]


def test_a_restart_creates_pods_and_never_the_groups() -> None:
    wire = job().scheduler("default-scheduler").task("ps", 1, min_available=1)
    wire = wire.task("w", 4, min_available=2).phase("Pending").build()
    seen, draft = steps.start(
        observe(wire, [], pod_group=pod_group_of(wire, "Inqueue"),
                **composite_state(wire, ps=1, w=2)),
        COMPOSITE,
    )  # fmt: skip
    draft = activesync.sync(seen, draft)
    assert {o["kind"] for o in draft.effects.create} == {"Pod"}
    assert draft.effects.update == ()


def test_without_composite_pod_groups_the_job_gang_stays_and_says_so() -> None:
    wire = job().scheduler("default-scheduler").task("ps", 1, min_available=1)
    wire = wire.task("w", 4, min_available=2).phase("Pending").build()
    seen, draft = steps.start(observe(wire, [], pod_group=None), SERVED)
    draft = activesync.sync(seen, draft)
    assert "CompositePodGroup" not in {o["kind"] for o in draft.effects.create}
    assert [e.reason for e in draft.effects.events] == [nativegang.PARTIAL_REASON]


def test_a_composite_gang_reports_the_job_minimum_beyond_its_tasks() -> None:
    wire = job().scheduler("default-scheduler").task("ps", 1, min_available=1)
    wire = wire.task("w", 4, min_available=2).min_available(4).phase("Pending").build()
    seen, draft = steps.start(observe(wire, [], pod_group=None), COMPOSITE)
    draft = activesync.sync(seen, draft)
    assert [e.message for e in draft.effects.events] == [
        "kube-scheduler's gang is its tasks' minAvailable (ps 1, w 2); it cannot express "
        "minAvailable 4 beyond the tasks' own (3 pods)"
    ]


def test_any_tasks_group_kube_scheduler_cannot_place_blocks_the_job() -> None:
    placed = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}]}
    waiting = {
        "conditions": [
            {
                "type": "PodGroupInitiallyScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "minGroupCount (2) cannot be satisfied",
            }
        ]
    }
    found = blocked.blocked_reason(
        missing_pvcs=[],
        queue=blocked.QueueFacts("default"),
        pod_group=None,
        pods=[],
        native_pod_groups=[
            {"metadata": {"name": "j-u-ps"}, "status": placed},
            {"metadata": {"name": "j-u-w"}, "status": waiting},
        ],
    )
    assert found == blocked.Blocked(
        "Unschedulable", "kube-scheduler: minGroupCount (2) cannot be satisfied"
    )


def test_a_tasks_group_name_fits_the_longest_job_and_task_names() -> None:
    long_job, long_task = "j" * 63, "t" * 63
    wire = job(long_job).scheduler("default-scheduler").task(long_task, 2, min_available=1)
    j = Job.from_wire(wire.task("w", 2, min_available=1).build())
    name = nativegang.task_pod_group_name(j, long_task)
    assert name == f"{long_job}-{j.uid}-{long_task}"
    assert len(name) <= 253  # a DNS subdomain, as kube-apiserver checks PodGroup names
