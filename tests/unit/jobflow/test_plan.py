"""The JobFlow planner: which Jobs are created when, the status Volcano writes, the phase,
jobRetainPolicy, dependencies on Failed, probes' verdicts and the spec patch."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controller.jobflow.decide.jobs import merge_job_spec
from controller.jobflow.decide.plan import plan, probes_to_run, template_status
from controller.jobflow.decide.probes import NetworkProbe, ProbeOutcome

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def flow(
    *steps: tuple[str, list[str]] | tuple[str, list[str], dict[str, Any]],
    retain: str | None = None,
    phase: str | None = None,
) -> dict[str, Any]:
    flows = []
    for step in steps:
        name, targets = step[0], step[1]
        depends: dict[str, Any] = {"targets": targets} if targets else {}
        extra: dict[str, Any] = dict(step[2]) if len(step) > 2 else {}
        if "dependsOn" in extra:
            depends.update(extra.pop("dependsOn"))
        flows.append({"name": name, **({"dependsOn": depends} if depends else {}), **extra})
    out: dict[str, Any] = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "f", "namespace": "ns", "uid": "flow-uid"},
        "spec": {"flows": flows},
    }
    if retain:
        out["spec"]["jobRetainPolicy"] = retain
    if phase:
        out["status"] = {"state": {"phase": phase}}
    return out


def template(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "minAvailable": 1,
            "maxRetry": 5,
            "tasks": [
                {"name": "main", "replicas": replicas, "template": {"spec": {"containers": []}}},
                {"name": "side", "replicas": 1, "template": {"spec": {"containers": []}}},
            ],
        },
    }


TEMPLATES = {n: template(n) for n in ("a", "b", "c", "d")}


def job(step: str, phase: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"f-{step}",
            "namespace": "ns",
            "creationTimestamp": "2026-01-02T03:00:00Z",
            "annotations": {"volcano.sh/createdByJobTemplate": f"ns.{step}"},
        },
        "spec": template(step)["spec"],
        "status": {"state": {"phase": phase}, **status},
    }


DIAMOND = flow(("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c"]))

# (flow, the flow's jobs by step and phase) -> (jobs created, flow phase)
CASES = {
    "nothing yet: the root": (DIAMOND, {}, ["f-a"], "Pending"),
    "root pending: nothing more": (DIAMOND, {"a": "Pending"}, [], "Pending"),
    "root running": (DIAMOND, {"a": "Running"}, [], "Running"),
    "root completed: both branches": (DIAMOND, {"a": "Completed"}, ["f-b", "f-c"], "Running"),
    "one branch done: wait for the other": (
        DIAMOND,
        {"a": "Completed", "b": "Completed", "c": "Running"},
        [],
        "Running",
    ),
    "both branches done: the join": (
        DIAMOND,
        {"a": "Completed", "b": "Completed", "c": "Completed"},
        ["f-d"],
        "Running",
    ),
    "all completed": (
        DIAMOND,
        {"a": "Completed", "b": "Completed", "c": "Completed", "d": "Completed"},
        [],
        "Succeed",
    ),
    "a failure fails the flow and stops it": (
        DIAMOND,
        {"a": "Completed", "b": "Failed"},
        [],
        "Failed",
    ),
    "terminated fails the flow": (DIAMOND, {"a": "Terminated"}, [], "Failed"),
    "a failure someone depends on is handled": (
        flow(("a", []), ("ok", ["a"]), ("cleanup", ["a"], {"dependsOn": {"phases": ["Failed"]}})),
        {"a": "Failed"},
        ["f-cleanup"],
        "Running",
    ),
    "the other branch is skipped": (
        flow(
            ("a", []),
            ("ok", ["a"]),
            ("after-ok", ["ok"]),
            ("cleanup", ["a"], {"dependsOn": {"phases": ["Failed"]}}),
        ),
        {"a": "Failed", "cleanup": "Completed"},
        [],
        "Succeed",
    ),
    "the failure branch is skipped on success": (
        flow(("a", []), ("ok", ["a"]), ("cleanup", ["a"], {"dependsOn": {"phases": ["Failed"]}})),
        {"a": "Completed", "ok": "Completed"},
        [],
        "Succeed",
    ),
    "either outcome": (
        flow(("a", []), ("report", ["a"], {"dependsOn": {"phases": ["Completed", "Failed"]}})),
        {"a": "Failed"},
        ["f-report"],
        "Running",
    ),
    "a failed flow creates nothing more": (
        flow(("a", []), ("b", []), phase="Failed"),
        {"a": "Completed"},
        [],
        "Failed",
    ),
    "no flows succeed at once": (flow(), {}, [], "Succeed"),
    "restarting and aborted jobs keep the flow running": (
        flow(("a", []), ("b", [])),
        {"a": "Restarting", "b": "Aborted"},
        [],
        "Running",
    ),
}


@pytest.mark.parametrize(("raw", "phases", "created", "phase"), CASES.values(), ids=CASES.keys())
def test_jobs_are_created_when_their_dependencies_are_met(
    raw: dict[str, Any], phases: dict[str, str], created: list[str], phase: str
) -> None:
    templates = {**TEMPLATES, **{n: template(n) for n in ("ok", "after-ok", "cleanup", "report")}}
    jobs = [job(step, p) for step, p in phases.items()]
    result = plan(raw, templates, jobs, {}, NOW)
    assert [j["metadata"]["name"] for j in result.create] == created
    assert result.status["state"] == {"phase": phase}


def test_the_created_job_is_the_template_controlled_by_the_flow() -> None:
    (created,) = plan(DIAMOND, TEMPLATES, [], {}, NOW).create
    assert created["metadata"] == {
        "name": "f-a",
        "namespace": "ns",
        "labels": {
            "volcano.sh/createdByJobTemplate": "ns.a",
            "volcano.sh/createdByJobFlow": "ns.f",
        },
        "annotations": {
            "volcano.sh/createdByJobTemplate": "ns.a",
            "volcano.sh/createdByJobFlow": "ns.f",
        },
        "ownerReferences": [
            {
                "apiVersion": "flow.volcano.sh/v1alpha1",
                "kind": "JobFlow",
                "name": "f",
                "uid": "flow-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert created["spec"] == TEMPLATES["a"]["spec"]
    assert (created["apiVersion"], created["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")


def test_a_missing_template_waits_with_a_warning() -> None:
    result = plan(DIAMOND, {}, [], {}, NOW)
    assert result.create == []
    assert [(e.type, e.reason) for e in result.events] == [("Warning", "JobTemplateNotFound")]
    assert result.requeue_after is not None


@pytest.mark.parametrize("status", [None, {"state": {"phase": "Running"}, "runningJobs": ["f-a"]}])
def test_a_missing_template_leaves_the_status_as_it_is(status: dict[str, Any] | None) -> None:
    """Nothing is written while a step waits for its template: the flow a client just created
    keeps its resourceVersion (Volcano's admission suite updates it right away)."""
    waiting = flow(("a", []), ("b", ["a"]))
    if status is not None:
        waiting["status"] = status
    result = plan(waiting, {}, [], {}, NOW)
    assert result.status == (status or {})


def test_status_lists_jobs_by_phase_as_volcano() -> None:
    jobs = [
        job("a", "Completed", runningDuration="1m30s", retryCount=2),
        job("b", "Running", taskStatusCount={"main": {"phase": {"Running": 1}}}),
        job("c", "Aborted"),
        job("d", "Completing"),
    ]
    status = plan(DIAMOND, TEMPLATES, jobs, {}, NOW).status
    assert status["completedJobs"] == ["f-a"]
    assert status["runningJobs"] == ["f-b"]
    assert status["unKnowJobs"] == ["f-c"]
    assert "pendingJobs" not in status and "failedJobs" not in status
    assert status["conditions"]["f-b"] == {
        "phase": "Running",
        "createTime": "2026-01-02T03:00:00Z",
        "taskStatusCount": {"main": {"phase": {"Running": 1}}},
    }
    first = status["jobStatusList"][0]
    assert first == {
        "name": "f-a",
        "state": "Completed",
        "startTimestamp": "2026-01-02T03:00:00Z",
        "endTimestamp": "2026-01-02T03:01:30Z",
        "restartCount": 2,
        "runningHistories": [{"startTimestamp": "2026-01-02T03:04:05Z", "state": "Completed"}],
    }


def test_running_histories_close_a_phase_when_the_next_is_seen() -> None:
    earlier = plan(DIAMOND, TEMPLATES, [job("a", "Running")], {}, NOW).status
    later = datetime(2026, 1, 2, 3, 10, tzinfo=UTC)
    raw = {**DIAMOND, "status": earlier}
    status = plan(raw, TEMPLATES, [job("a", "Completed")], {}, later).status
    assert status["jobStatusList"][0]["runningHistories"] == [
        {
            "startTimestamp": "2026-01-02T03:04:05Z",
            "state": "Running",
            "endTimestamp": "2026-01-02T03:10:00Z",
        },
        {"startTimestamp": "2026-01-02T03:10:00Z", "state": "Completed"},
    ]


def test_retain_policy_delete_removes_the_jobs_once_the_flow_succeeds() -> None:
    raw = flow(("a", []), ("b", ["a"]), retain="delete")
    running = plan(raw, TEMPLATES, [job("a", "Completed"), job("b", "Running")], {}, NOW)
    assert running.delete == []
    done = plan(raw, TEMPLATES, [job("a", "Completed"), job("b", "Completed")], {}, NOW)
    assert done.delete == ["f-a", "f-b"]
    assert done.status["completedJobs"] == ["f-a", "f-b"]
    # Once Succeeded, the status stays as written while the Jobs go.
    after = plan({**raw, "status": done.status}, TEMPLATES, [job("b", "Completed")], {}, NOW)
    assert after.delete == ["f-b"] and after.status == done.status


def test_retain_policy_retain_keeps_the_jobs() -> None:
    raw = flow(("a", []), retain="retain")
    assert plan(raw, TEMPLATES, [job("a", "Completed")], {}, NOW).delete == []


def test_a_failed_flow_keeps_its_jobs_even_with_delete() -> None:
    raw = flow(("a", []), retain="delete")
    assert plan(raw, TEMPLATES, [job("a", "Failed")], {}, NOW).delete == []


def test_patch_merges_into_the_template_spec() -> None:
    raw = flow(
        ("a", []),
        (
            "b",
            ["a"],
            {"patch": {"jobSpec": {"tasks": [{"name": "main", "replicas": 3}], "queue": "q1"}}},
        ),
    )
    (created,) = plan(raw, TEMPLATES, [job("a", "Completed")], {}, NOW).create
    main, side = created["spec"]["tasks"]
    assert (main["name"], main["replicas"], main["template"]) == (
        "main",
        3,
        {"spec": {"containers": []}},
    )
    assert side == TEMPLATES["b"]["spec"]["tasks"][1]
    assert created["spec"]["queue"] == "q1" and created["spec"]["maxRetry"] == 5
    # The template itself is untouched.
    assert TEMPLATES["b"]["spec"]["tasks"][0]["replicas"] == 1


MERGES = {
    "scalar replaced": ({"maxRetry": 3}, {"maxRetry": 1}, {"maxRetry": 1}),
    "null removes": ({"queue": "a", "maxRetry": 3}, {"queue": None}, {"maxRetry": 3}),
    "objects merge": (
        {"plugins": {"svc": []}},
        {"plugins": {"ssh": []}},
        {"plugins": {"svc": [], "ssh": []}},
    ),
    "other lists replace": (
        {"policies": [{"event": "PodFailed"}]},
        {"policies": [{"event": "PodEvicted"}]},
        {"policies": [{"event": "PodEvicted"}]},
    ),
    "new task appended": (
        {"tasks": [{"name": "a", "replicas": 1}]},
        {"tasks": [{"name": "b", "replicas": 2}]},
        {"tasks": [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 2}]},
    ),
    "no patch": ({"queue": "a"}, None, {"queue": "a"}),
}


@pytest.mark.parametrize(("base", "patch", "merged"), MERGES.values(), ids=MERGES.keys())
def test_merge_job_spec(
    base: dict[str, Any], patch: dict[str, Any] | None, merged: dict[str, Any]
) -> None:
    assert merge_job_spec(base, patch) == merged


PROBED = flow(
    ("server", []),
    (
        "client",
        ["server"],
        {
            "dependsOn": {
                "probe": {"httpGetList": [{"taskName": "main", "port": 8080, "path": "/ready"}]}
            }
        },
    ),
)


def test_network_probes_run_once_the_targets_exist() -> None:
    assert probes_to_run(PROBED, []) == []
    (check,) = probes_to_run(PROBED, [job("server", "Running")])
    assert check == NetworkProbe("client", "f-server", "main", 8080, path="/ready")
    # Created: no more probing.
    assert probes_to_run(PROBED, [job("server", "Running"), job("client", "Pending")]) == []


PROBE_CASES = {
    "passed while the target runs": (True, "Running", ["f-client"], False),
    "failed: wait and look again": (False, "Running", [], True),
    "not run yet": (None, "Running", [], True),
}


@pytest.mark.parametrize(
    ("passed", "target_phase", "created", "requeued"), PROBE_CASES.values(), ids=PROBE_CASES.keys()
)
def test_a_probe_decides_without_a_phase_condition(
    passed: bool | None, target_phase: str, created: list[str], requeued: bool
) -> None:
    check = NetworkProbe("client", "f-server", "main", 8080, path="/ready")
    outcomes = {} if passed is None else {check: ProbeOutcome(passed, "GET answered 503")}
    result = plan(
        PROBED,
        {**TEMPLATES, "client": template("client")},
        [job("server", target_phase)],
        outcomes,
        NOW,
    )
    assert [j["metadata"]["name"] for j in result.create] == created
    assert (result.requeue_after is not None) == requeued


TASK_STATUS = {
    "all replicas running": ({"main": {"phase": {"Running": 2}}}, 2, True),
    "one of two running": ({"main": {"phase": {"Running": 1, "Pending": 1}}}, 2, False),
    "no counts yet": (None, 1, False),
}


@pytest.mark.parametrize(
    ("counts", "replicas", "ready"), TASK_STATUS.values(), ids=TASK_STATUS.keys()
)
def test_task_status_probe(counts: dict[str, Any] | None, replicas: int, ready: bool) -> None:
    raw = flow(
        ("server", []),
        (
            "client",
            ["server"],
            {
                "dependsOn": {
                    "probe": {"taskStatusList": [{"taskName": "main", "phase": "Running"}]}
                }
            },
        ),
    )
    server = job("server", "Running", **({"taskStatusCount": counts} if counts else {}))
    server["spec"] = template("server", replicas)["spec"]
    result = plan(raw, {"client": template("client")}, [server], {}, NOW)
    assert bool(result.create) == ready


def test_phases_and_probe_together_need_both() -> None:
    raw = flow(
        ("a", []),
        (
            "b",
            ["a"],
            {
                "dependsOn": {
                    "phases": ["Completed"],
                    "probe": {"taskStatusList": [{"taskName": "main", "phase": "Succeeded"}]},
                }
            },
        ),
    )
    done = job("a", "Completed", taskStatusCount={"main": {"phase": {"Succeeded": 1}}})
    assert plan(raw, TEMPLATES, [done], {}, NOW).create
    running = job("a", "Running", taskStatusCount={"main": {"phase": {"Succeeded": 1}}})
    assert not plan(raw, TEMPLATES, [running], {}, NOW).create


def test_template_status_lists_the_jobs_made_from_it() -> None:
    jobs = [
        job("a", "Running"),
        job("b", "Running"),
        {
            **job("a", "Running"),
            "metadata": {
                "name": "g-a",
                "namespace": "ns",
                "annotations": {"volcano.sh/createdByJobTemplate": "ns.a"},
            },
        },
    ]
    assert template_status(template("a"), jobs) == {"jobDependsOnList": ["f-a", "g-a"]}
    assert template_status(template("zzz"), jobs) == {}
