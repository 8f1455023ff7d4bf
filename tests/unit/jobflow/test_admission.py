"""JobFlow admission: the DAG rule (Volcano's admission e2e cases, and where vcjob says more),
duplicate names admitted with a warning, JobTemplates admitted with what a Job would lack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from webhook.admission import Kind
from webhook.jobflow.review import answer_jobflow, answer_jobtemplate
from webhook.jobflow.validation import NOT_DAG, find_cycles, read_steps, validate_jobflow
from webhook.settings import Settings

SETTINGS = Settings()


def flow(*steps: tuple[str, list[str]]) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "f", "namespace": "default"},
        "spec": {
            "flows": [
                {"name": name, **({"dependsOn": {"targets": targets}} if targets else {})}
                for name, targets in steps
            ]
        },
    }


ADMITTED = {
    "diamond and more": flow(
        ("a", []), ("b", ["a"]), ("c", ["a", "b"]), ("d", ["b"]), ("e", ["c", "d"])
    ),
    "duplicate names": flow(("a", []), ("a", []), ("b", ["a"])),
    "same target twice, duplicate with another dependency": flow(
        ("a", []), ("b", ["a"]), ("c", ["a"]), ("c", ["b"])
    ),
    "linear chain": flow(("start", []), ("middle", ["start"]), ("end", ["middle"])),
    "two roots": flow(
        ("root1", []),
        ("root2", []),
        ("level1-a", ["root1"]),
        ("level1-b", ["root2"]),
        ("level2", ["level1-a", "level1-b"]),
        ("final", ["level2"]),
    ),
    "no flows": flow(),
    "single flow": flow(("single-flow", [])),
}


@pytest.mark.parametrize("raw", ADMITTED.values(), ids=ADMITTED.keys())
def test_dags_are_admitted(raw: dict[str, Any]) -> None:
    errors, _ = validate_jobflow(raw)
    assert errors == []


DENIED = {
    "undefined target": (
        flow(("b", ["a"]), ("c", ["a", "b"])),
        [
            'spec.flows[0].dependsOn.targets[0]: Invalid value: "a": '
            "jobflow Flow is not DAG: vertex is not defined: a",
            'spec.flows[1].dependsOn.targets[0]: Invalid value: "a": '
            "jobflow Flow is not DAG: vertex is not defined: a",
        ],
    ),
    "self dependency": (
        flow(("self-dependent", ["self-dependent"])),
        [
            'spec.flows[0].dependsOn.targets[0]: Invalid value: "self-dependent": '
            "jobflow Flow is not DAG: the dependencies form a cycle: "
            "self-dependent -> self-dependent"
        ],
    ),
    "three-step cycle": (
        flow(("a", ["c"]), ("b", ["a"]), ("c", ["b"]), ("d", [])),
        [
            'spec.flows[0].dependsOn.targets[0]: Invalid value: "c": '
            "jobflow Flow is not DAG: the dependencies form a cycle: a -> c -> b -> a"
        ],
    ),
    "cycle through a duplicate entry": (
        flow(("a", []), ("b", ["a"]), ("a", ["b"])),
        [
            'spec.flows[2].dependsOn.targets[0]: Invalid value: "b": '
            "jobflow Flow is not DAG: the dependencies form a cycle: a -> b -> a"
        ],
    ),
}


@pytest.mark.parametrize(("raw", "messages"), DENIED.values(), ids=DENIED.keys())
def test_non_dags_are_denied_with_volcanos_phrase_and_the_field(
    raw: dict[str, Any], messages: list[str]
) -> None:
    errors, _ = validate_jobflow(raw)
    assert [str(e) for e in errors] == messages
    assert all(NOT_DAG in str(e) for e in errors)


def test_two_separate_cycles_are_both_named() -> None:
    steps = read_steps(flow(("a", ["b"]), ("b", ["a"]), ("c", ["d"]), ("d", ["c"])))
    assert find_cycles(steps) == [["a", "b", "a"], ["c", "d", "c"]]


def test_a_long_chain_needs_no_deep_recursion() -> None:
    names = [f"s{i}" for i in range(5000)]
    steps: list[tuple[str, list[str]]] = [(names[0], [])] + [
        (names[i], [names[i - 1]]) for i in range(1, len(names))
    ]
    assert validate_jobflow(flow(*steps)) == ([], [])


def test_duplicate_names_are_admitted_with_a_warning() -> None:
    errors, warnings = validate_jobflow(flow(("a", []), ("a", []), ("b", ["a"])))
    assert errors == []
    assert warnings == [
        "spec.flows[1].name: duplicate flow name 'a' (first at spec.flows[0]): "
        "only the first one runs"
    ]


def review(resource: str, obj: Any, operation: str = "CREATE") -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u1",
                "operation": operation,
                "resource": {
                    "group": "flow.volcano.sh",
                    "version": "v1alpha1",
                    "resource": resource,
                },
                "object": obj,
            },
        }
    ).encode()


def no_queues() -> tuple[None, None]:
    return None, None


def test_review_denies_a_cycle_with_a_status_kubectl_prints() -> None:
    answer = answer_jobflow(
        Kind.VALIDATE, review("jobflows", flow(("a", ["b"]), ("b", ["a"]))), SETTINGS, no_queues
    )
    response = answer.body["response"]
    assert response["uid"] == "u1" and response["allowed"] is False
    status = response["status"]
    assert status["code"] == 422 and status["details"]["kind"] == "JobFlow"
    assert status["message"].count(NOT_DAG) == 1
    assert status["details"]["causes"][0]["field"] == "spec.flows[0].dependsOn.targets[0]"


def test_review_refuses_other_resources_and_operations() -> None:
    wrong = answer_jobflow(Kind.VALIDATE, review("jobtemplates", flow()), SETTINGS, no_queues)
    assert "expected resource flow.volcano.sh/v1alpha1 jobflows" in str(wrong.body)
    delete = answer_jobflow(
        Kind.VALIDATE, review("jobflows", flow(), "DELETE"), SETTINGS, no_queues
    )
    assert "expect operation to be 'CREATE' or 'UPDATE'" in str(delete.body)


def test_jobtemplate_is_admitted_with_what_its_jobs_would_be_refused_for() -> None:
    template = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {"tasks": [], "minAvailable": 1},
    }
    answer = answer_jobtemplate(
        Kind.VALIDATE, review("jobtemplates", template), SETTINGS, no_queues
    )
    response = answer.body["response"]
    assert response["allowed"] is True
    assert response["warnings"]
    assert all(
        w.startswith("a Job created from this template would be refused: spec.")
        for w in response["warnings"]
    )
    good = {
        **template,
        "spec": {
            "tasks": [
                {
                    "name": "t",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ]
        },
    }
    answer = answer_jobtemplate(Kind.VALIDATE, review("jobtemplates", good), SETTINGS, no_queues)
    assert "warnings" not in answer.body["response"]
