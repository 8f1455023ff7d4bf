"""Admission of Volcano's other objects and the Job warnings, through the real TLS webhook
(`vcjob webhook` in its own process, at the paths of Volcano's webhook manager)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from shared import labels

# The fixture's process handle (conftest.WebhookProcess): url, ports, ca, logs, proc.
WebhookProcess = Any

SCHEDULING = {"group": "scheduling.volcano.sh", "version": "v1beta1"}


def review(
    resource: dict[str, str], obj: Any, operation: str = "CREATE", **request: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "uid-1",
            "resource": resource,
            "operation": operation,
            "object": obj,
            **request,
        },
    }


def post(webhook: WebhookProcess, path: str, body: dict[str, Any]) -> dict[str, Any]:
    with httpx.Client(verify=webhook.ca, timeout=10) as client:
        response = client.post(f"{webhook.url}{path}", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()["response"]
    assert answer["uid"] == "uid-1"
    return answer


def queue(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": spec,
    }


QUEUES = {**SCHEDULING, "resource": "queues"}


def test_a_new_queue_gets_volcanos_defaults(webhook: WebhookProcess) -> None:
    answer = post(webhook, labels.QUEUE_MUTATE_PATH, review(QUEUES, queue()))
    assert answer["allowed"] is True and answer["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(answer["patch"]))
    assert sorted((op["op"], op["path"], op["value"]) for op in patch) == [
        ("add", "/spec/reclaimable", True),
        ("add", "/spec/weight", 1),
    ]


def test_a_queue_denial_lists_every_problem_with_volcanos_phrases(webhook: WebhookProcess) -> None:
    bad = queue(
        weight=-1,
        capability={"cpu": "1"},
        deserved={"cpu": "2"},
        guarantee={"resource": {"cpu": "3"}},
    )
    bad["metadata"]["annotations"] = {
        "volcano.sh/hierarchy": "a/b",
        "volcano.sh/hierarchy-weights": "1",
    }
    answer = post(webhook, labels.QUEUE_VALIDATE_PATH, review(QUEUES, bad))
    status = answer["status"]
    assert answer["allowed"] is False and (status["code"], status["reason"]) == (422, "Invalid")
    assert status["details"]["kind"] == "Queue"
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec.weight",
        "spec.deserved[cpu]",
        "spec.deserved[cpu]",
        "metadata.annotations[volcano.sh/hierarchy]",
    ]
    for phrase in (
        "should be greater than or equal to 1",
        "must be >= guarantee",
        "must be <= capability",
        "must have the same length",
    ):
        assert phrase in status["message"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("default", "`default` queue can not be deleted"),
        ("root", "`root` queue can not be deleted"),
    ],
)
def test_protected_queues_are_never_deleted(
    webhook: WebhookProcess, name: str, message: str
) -> None:
    old = {"metadata": {"name": name}, "status": {"state": "Closed"}}
    body = review(QUEUES, None, "DELETE", name=name, oldObject=old)
    answer = post(webhook, labels.QUEUE_VALIDATE_PATH, body)
    assert answer["allowed"] is False
    assert answer["status"]["message"] == f"metadata.name: Forbidden: {message}"


def test_a_regular_queue_is_deleted_in_any_state_by_default(webhook: WebhookProcess) -> None:
    # As Volcano 1.14 and later: no Closed state asked for.
    for state in ("Open", "Closing", "Closed"):
        old = {"metadata": {"name": "q"}, "status": {"state": state}}
        body = review(QUEUES, None, "DELETE", name="q", oldObject=old)
        assert post(webhook, labels.QUEUE_VALIDATE_PATH, body)["allowed"] is True, state


def test_the_closed_only_rule_is_an_opt_in(
    start_webhook: Callable[..., WebhookProcess],
) -> None:
    strict = start_webhook("--queue-delete-requires-closed")
    open_queue = {"metadata": {"name": "q"}, "status": {"state": "Open"}}
    body = review(QUEUES, None, "DELETE", name="q", oldObject=open_queue)
    answer = post(strict, labels.QUEUE_VALIDATE_PATH, body)
    assert answer["allowed"] is False
    assert (
        "only queue with state `Closed` can be deleted, queue `q` state is `Open`"
        in (answer["status"]["message"])
    )
    closed = {"metadata": {"name": "q"}, "status": {"state": "Closed"}}
    body = review(QUEUES, None, "DELETE", name="q", oldObject=closed)
    assert post(strict, labels.QUEUE_VALIDATE_PATH, body)["allowed"] is True


PODS = {"group": "", "version": "v1", "resource": "pods"}


def pod(scheduler: str, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "annotations": annotations},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "i"}]},
    }


def test_pod_budget_annotations(webhook: WebhookProcess) -> None:
    # The fixture's webhook runs with --scheduler-name kube-batch.
    denied = post(
        webhook,
        labels.POD_VALIDATE_PATH,
        review(PODS, pod("kube-batch", **{"volcano.sh/jdb-min-available": "0"})),
    )
    assert denied["allowed"] is False
    assert "must be a positive integer" in denied["status"]["message"]
    assert denied["status"]["details"]["causes"][0]["field"] == (
        "metadata.annotations[volcano.sh/jdb-min-available]"
    )
    other = pod("default-scheduler", **{"volcano.sh/jdb-min-available": "0"})
    assert post(webhook, labels.POD_VALIDATE_PATH, review(PODS, other))["allowed"] is True


HYPERNODES = {"group": "topology.volcano.sh", "version": "v1alpha1", "resource": "hypernodes"}


def test_hypernode_members(webhook: WebhookProcess) -> None:
    node = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "s0"},
        "spec": {
            "tier": 1,
            "members": [
                {"type": "Node", "selector": {"regexMatch": {"pattern": "a(b"}}},
                {"type": "HyperNode", "selector": {"labelMatch": {"matchLabels": {"a": "b"}}}},
            ],
        },
    }
    answer = post(webhook, labels.HYPERNODE_VALIDATE_PATH, review(HYPERNODES, node))
    assert answer["allowed"] is False
    assert "member regexMatch pattern is invalid" in answer["status"]["message"]
    assert answer["status"]["details"]["causes"][0]["field"] == (
        "spec.members[0].selector.regexMatch.pattern"
    )
    # The second member's label selector is only worth a warning, as Volcano admits it.
    assert answer["warnings"] == [
        "spec.members[1].selector.labelMatch: a label selector only takes effect for members of "
        "type Node; the scheduler ignores this member"
    ]
    node["spec"]["members"] = []
    answer = post(webhook, labels.HYPERNODE_VALIDATE_PATH, review(HYPERNODES, node, "UPDATE"))
    assert "member must have at least one member" in answer["status"]["message"]


def opted_in_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "annotations": {labels.QUEUE_ALLOCATION_GATE_KEY: "true"},
        },
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }


def test_pod_mutation_adds_the_queue_gate_only_with_its_feature_gate(
    webhook: WebhookProcess, start_webhook: Callable[..., WebhookProcess]
) -> None:
    # Off by default, as in Volcano: allowed untouched.
    answer = post(webhook, labels.POD_MUTATE_PATH, review(PODS, opted_in_pod()))
    assert answer["allowed"] is True and "patch" not in answer
    gated = start_webhook("--feature-gates", "SchedulingGatesQueueAdmission=true")
    answer = post(gated, labels.POD_MUTATE_PATH, review(PODS, opted_in_pod()))
    assert answer["allowed"] is True and answer["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(answer["patch"])) == [
        {
            "op": "add",
            "path": "/spec/schedulingGates",
            "value": [{"name": labels.QUEUE_ALLOCATION_GATE_KEY}],
        }
    ]


def test_podgroup_networktopology_and_wrong_operation(webhook: WebhookProcess) -> None:
    resource = {**SCHEDULING, "resource": "podgroups"}
    group = {
        "metadata": {"name": "pg", "namespace": "ns"},
        "spec": {"networkTopology": {"highestTierAllowed": 1, "highestTierName": "r"}},
    }
    answer = post(webhook, labels.PODGROUP_VALIDATE_PATH, review(resource, group))
    assert (
        "must not specify 'highestTierAllowed' and 'highestTierName'"
        in (answer["status"]["message"])
    )
    wrong = post(webhook, labels.PODGROUP_VALIDATE_PATH, review(resource, group, "UPDATE"))
    assert wrong["status"]["message"] == "expected operation CREATE, got 'UPDATE'"
    elsewhere = post(webhook, labels.PODGROUP_VALIDATE_PATH, review(QUEUES, group))
    assert elsewhere["status"]["message"].startswith(
        "expected resource scheduling.volcano.sh/v1beta1 podgroups"
    )


JOBS = {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"}


def test_what_volcano_admits_in_a_job_is_a_warning(webhook: WebhookProcess) -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "warned", "namespace": "ns"},
        "spec": {
            "minAvailable": 1,
            "plugins": {"svc": ["--enable-networking"], "ssh": ["--no-root"]},
            "policies": [{"events": ["PodFailed", "PodFailed"], "action": "RestartJob"}],
            "tasks": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
        },
    }
    answer = post(webhook, labels.VALIDATE_PATH, review(JOBS, job))
    assert answer["allowed"] is True
    assert answer["warnings"] == [
        "spec.plugins[svc][0]: '--enable-networking': unknown flag --enable-networking; supported "
        "flags: --publish-not-ready-addresses, --disable-network-policy, --inject-hosts-env; the "
        "flags from here on keep their defaults",
        "spec.plugins[ssh][0]: '--no-root': --no-root was removed from Volcano's ssh plugin and "
        "has no effect",
        "spec.policies[0].events[1]: 'PodFailed' is repeated in this policy and counts once; "
        "remove the repetition",
    ]
