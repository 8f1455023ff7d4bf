"""The admission chain against a real TLS webhook: wire format, matching, failures, wording."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from localcluster.apiserver.admission import (
    AdmissionAttributes,
    AdmissionChain,
    rule_matches,
    rules_match,
)
from localcluster.apiserver.errors import StatusError
from shared import certgen

T = TypeVar("T")

CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cm", "namespace": "team"},
}

ATTRS = AdmissionAttributes(
    operation="CREATE",
    group="",
    version="v1",
    resource="configmaps",
    subresource="",
    kind_group="",
    kind_version="v1",
    kind="ConfigMap",
    name="cm",
    namespace="team",
    object=CONFIGMAP,
    old_object=None,
    dry_run=False,
)

NAMESPACE_LABELS = {"team": {"admission": "on"}, "other": {}}


def hook(name: str, url: str, ca: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
                "operations": ["CREATE", "UPDATE"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


def config(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "webhooks": list(hooks)}


def run(
    mutating: list[dict[str, Any]],
    validating: list[dict[str, Any]],
    step: Callable[[AdmissionChain], Awaitable[T]],
    resolve: Any = None,
) -> T:
    async def configurations() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return mutating, validating

    async def labels(namespace: str) -> dict[str, str]:
        return NAMESPACE_LABELS.get(namespace, {})

    async def scenario() -> T:
        chain = AdmissionChain(configurations, labels, resolve)
        try:
            return await step(chain)
        finally:
            await chain.aclose()

    return asyncio.run(scenario())


def raised(
    mutating: list[dict[str, Any]],
    validating: list[dict[str, Any]],
    attrs: AdmissionAttributes = ATTRS,
) -> StatusError:
    async def step(chain: AdmissionChain) -> None:
        await chain.mutate(attrs)
        await chain.validate(attrs)

    with pytest.raises(StatusError) as info:
        run(mutating, validating, step)
    return info.value


def test_allowing_webhook_returns_warnings_and_sends_a_v1_review(webhook: Any) -> None:
    webhook.calls.clear()
    warnings = run(
        [],
        [config("v", hook("allow.example.com", webhook.url("/allow"), webhook.ca_bundle))],
        lambda chain: chain.validate(ATTRS),
    )
    assert warnings == ["looks fine"]
    path, _, review = webhook.calls[-1]
    assert path == "/allow?timeout=10s"
    request = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["requestKind"] == request["kind"]
    assert request["operation"] == "CREATE" and request["namespace"] == "team"
    assert request["object"] == CONFIGMAP and request["oldObject"] is None
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert request["userInfo"]["username"] == "system:admin"


def test_each_call_gets_a_new_uid(webhook: Any) -> None:
    webhook.calls.clear()
    configuration = [
        config("v", hook("allow.example.com", webhook.url("/allow"), webhook.ca_bundle))
    ]

    async def twice(chain: AdmissionChain) -> None:
        await chain.validate(ATTRS)
        await chain.validate(ATTRS)

    run([], configuration, twice)
    uids = {review["request"]["uid"] for _, _, review in webhook.calls}
    assert len(uids) == 2


def test_denial_is_worded_like_kube_and_keeps_code_and_causes(webhook: Any) -> None:
    error = raised(
        [], [config("v", hook("deny.example.com", webhook.url("/deny"), webhook.ca_bundle))]
    )
    assert error.code == 422 and error.reason == "Invalid"
    assert (
        error.message
        == 'admission webhook "deny.example.com" denied the request: spec.x: Required value'
    )
    assert error.details is not None and error.details["causes"][0]["field"] == "spec.x"


def test_denial_without_status_is_403_without_explanation(webhook: Any) -> None:
    error = raised(
        [],
        [config("v", hook("quiet.example.com", webhook.url("/deny-silently"), webhook.ca_bundle))],
    )
    assert error.code == 403
    assert (
        error.message
        == 'admission webhook "quiet.example.com" denied the request without explanation'
    )


def test_mutating_webhooks_patch_in_order_of_configuration_name(webhook: Any) -> None:
    first = config("a-first", hook("patch.example.com", webhook.url("/patch"), webhook.ca_bundle))
    second = config(
        "b-second", hook("again.example.com", webhook.url("/patch-again"), webhook.ca_bundle)
    )
    mutated = run([second, first], [], lambda chain: chain.mutate(ATTRS))
    assert mutated is not None
    assert mutated["metadata"]["labels"] == {"patched": "yes", "second": "yes"}
    assert ATTRS.object is not None and "labels" not in ATTRS.object["metadata"]


def test_mutate_returns_none_when_no_webhook_matches(webhook: Any) -> None:
    other = hook(
        "patch.example.com",
        webhook.url("/patch"),
        webhook.ca_bundle,
        rules=[
            {
                "apiGroups": ["apps"],
                "apiVersions": ["v1"],
                "resources": ["deployments"],
                "operations": ["*"],
            }
        ],
    )
    assert run([config("m", other)], [], lambda chain: chain.mutate(ATTRS)) is None


FAILURES = [
    pytest.param(
        "/garbage", "failed to call webhook: invalid JSON in the response", id="garbage body"
    ),
    pytest.param(
        "/wrong-uid", "received invalid webhook response: expected response.uid=", id="wrong uid"
    ),
    pytest.param(
        "/error", 'failed to call webhook: an error on the server ("boom")', id="HTTP 500"
    ),
]


@pytest.mark.parametrize(("path", "detail"), FAILURES)
def test_call_failure_with_fail_policy_is_an_internal_error(
    webhook: Any, path: str, detail: str
) -> None:
    error = raised(
        [], [config("v", hook("broken.example.com", webhook.url(path), webhook.ca_bundle))]
    )
    assert error.code == 500 and error.reason == "InternalError"
    assert error.message.startswith(
        f'Internal error occurred: failed calling webhook "broken.example.com": {detail}'
    )


def test_timeout_names_the_url_like_kube(webhook: Any) -> None:
    slow = hook("slow.example.com", webhook.url("/slow"), webhook.ca_bundle, timeoutSeconds=1)
    error = raised([], [config("v", slow)])
    assert error.message == (
        'Internal error occurred: failed calling webhook "slow.example.com": '
        "failed to call webhook: "
        f'Post "https://127.0.0.1:{webhook.port}/slow?timeout=1s": context deadline exceeded'
    )


def test_connection_refused_names_the_address(unused_port: int) -> None:
    refused = hook("gone.example.com", f"https://127.0.0.1:{unused_port}/x", "")
    error = raised([], [config("v", refused)])
    assert error.message == (
        'Internal error occurred: failed calling webhook "gone.example.com": '
        "failed to call webhook: "
        f'Post "https://127.0.0.1:{unused_port}/x?timeout=10s": dial tcp 127.0.0.1:{unused_port}: '
        "connect: connection refused"
    )


def test_untrusted_certificate_fails_the_call(webhook: Any) -> None:
    other_ca = base64.b64encode(certgen.issue_ca().cert_pem).decode()
    error = raised([], [config("v", hook("tls.example.com", webhook.url("/allow"), other_ca))])
    assert (
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        in error.message
    )


@pytest.mark.parametrize("path", ["/garbage", "/slow", "/error"])
def test_ignore_policy_skips_a_failing_webhook(webhook: Any, path: str) -> None:
    ignored = hook(
        "ignored.example.com",
        webhook.url(path),
        webhook.ca_bundle,
        failurePolicy="Ignore",
        timeoutSeconds=1,
    )
    assert run([], [config("v", ignored)], lambda chain: chain.validate(ATTRS)) == []
    assert run([config("m", ignored)], [], lambda chain: chain.mutate(ATTRS)) == CONFIGMAP


def test_ignore_policy_does_not_hide_a_denial(webhook: Any) -> None:
    denying = hook(
        "deny.example.com", webhook.url("/deny"), webhook.ca_bundle, failurePolicy="Ignore"
    )
    assert raised([], [config("v", denying)]).code == 422


def test_service_reference_connects_to_the_resolved_address_and_verifies_the_service_name(
    webhook: Any,
) -> None:
    webhook.calls.clear()
    resolved: list[tuple[str, str, int]] = []

    async def resolve(namespace: str, name: str, port: int) -> tuple[str, int]:
        resolved.append((namespace, name, port))
        return "127.0.0.1", webhook.port

    service_hook = hook("svc.example.com", "", webhook.ca_bundle)
    service_hook["clientConfig"] = {
        "service": {"namespace": "webhooks", "name": "hook", "path": "/allow"},
        "caBundle": webhook.ca_bundle,
    }
    assert run([], [config("v", service_hook)], lambda c: c.validate(ATTRS), resolve) == [
        "looks fine"
    ]
    assert resolved == [("webhooks", "hook", 443)]
    assert webhook.calls[-1][1].split(":")[0] == "hook.webhooks.svc"


def test_service_whose_certificate_does_not_name_it_fails(webhook: Any) -> None:
    async def resolve(namespace: str, name: str, port: int) -> tuple[str, int]:
        return "127.0.0.1", webhook.port

    service_hook = hook("svc.example.com", "", webhook.ca_bundle)
    service_hook["clientConfig"] = {
        "service": {"namespace": "elsewhere", "name": "hook", "path": "/allow", "port": 8443},
        "caBundle": webhook.ca_bundle,
    }

    async def step(chain: AdmissionChain) -> list[str]:
        return await chain.validate(ATTRS)

    with pytest.raises(StatusError) as info:
        run([], [config("v", service_hook)], step, resolve)
    assert 'Post "https://hook.elsewhere.svc:8443/allow?timeout=10s": tls: failed to verify' in (
        info.value.message
    )


def test_dry_run_with_side_effects_is_a_bad_request(webhook: Any) -> None:
    unsafe = hook(
        "unsafe.example.com", webhook.url("/allow"), webhook.ca_bundle, sideEffects="Some"
    )
    error = raised([], [config("v", unsafe)], dataclasses.replace(ATTRS, dry_run=True))
    assert (error.code, error.reason) == (400, "BadRequest")
    assert error.message == 'admission webhook "unsafe.example.com" does not support dry run'


def test_dry_run_reaches_side_effect_free_webhooks(webhook: Any) -> None:
    webhook.calls.clear()
    safe = hook(
        "safe.example.com", webhook.url("/allow"), webhook.ca_bundle, sideEffects="NoneOnDryRun"
    )
    run([], [config("v", safe)], lambda c: c.validate(dataclasses.replace(ATTRS, dry_run=True)))
    request = webhook.calls[-1][2]["request"]
    assert request["dryRun"] is True and request["options"]["dryRun"] == ["All"]


def test_webhook_without_v1_reviews_fails(webhook: Any) -> None:
    old = hook(
        "old.example.com",
        webhook.url("/allow"),
        webhook.ca_bundle,
        admissionReviewVersions=["v1beta1"],
    )
    assert raised([], [config("v", old)]).message == (
        'Internal error occurred: failed calling webhook "old.example.com": '
        "webhook does not accept known AdmissionReview versions"
    )


SELECTOR_CASES = [
    pytest.param(
        {"namespaceSelector": {"matchLabels": {"admission": "on"}}},
        ATTRS,
        True,
        id="namespace selector matches the namespace's labels",
    ),
    pytest.param(
        {"namespaceSelector": {"matchLabels": {"admission": "on"}}},
        dataclasses.replace(ATTRS, namespace="other"),
        False,
        id="namespace selector exempts other namespaces",
    ),
    pytest.param(
        {
            "namespaceSelector": {
                "matchExpressions": [{"key": "admission", "operator": "NotIn", "values": ["on"]}]
            }
        },
        ATTRS,
        False,
        id="namespace selector NotIn",
    ),
    pytest.param(
        {"namespaceSelector": {"matchLabels": {"admission": "on"}}},
        dataclasses.replace(ATTRS, namespace=""),
        True,
        id="cluster-scoped objects are never exempted by a namespace selector",
    ),
    pytest.param(
        {"namespaceSelector": {"matchLabels": {"admission": "on"}}},
        dataclasses.replace(
            ATTRS,
            resource="namespaces",
            kind="Namespace",
            namespace="",
            name="new",
            object={"metadata": {"name": "new", "labels": {"admission": "on"}}},
        ),
        True,
        id="a namespace being created is matched on its own labels",
    ),
    pytest.param(
        {"objectSelector": {"matchLabels": {"app": "x"}}},
        ATTRS,
        False,
        id="object selector skips objects without the label",
    ),
    pytest.param(
        {"objectSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
        dataclasses.replace(
            ATTRS,
            operation="UPDATE",
            object=CONFIGMAP,
            old_object={"metadata": {"labels": {"app": "y"}}},
        ),
        True,
        id="object selector also matches the old object",
    ),
    pytest.param(
        {"objectSelector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}},
        ATTRS,
        True,
        id="object selector DoesNotExist",
    ),
]


@pytest.mark.parametrize(("selectors", "attrs", "called"), SELECTOR_CASES)
def test_selectors(
    webhook: Any, selectors: dict[str, Any], attrs: AdmissionAttributes, called: bool
) -> None:
    webhook.calls.clear()
    rules = [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]
    selected = hook(
        "sel.example.com", webhook.url("/allow"), webhook.ca_bundle, rules=rules, **selectors
    )
    run([], [config("v", selected)], lambda chain: chain.validate(attrs))
    assert bool(webhook.calls) is called


def rule(**fields: Any) -> dict[str, Any]:
    base = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["configmaps"],
        "operations": ["CREATE"],
    }
    return {**base, **fields}


STATUS = dataclasses.replace(ATTRS, subresource="status", operation="UPDATE")

RULE_CASES = [
    pytest.param(rule(), ATTRS, True, id="exact group version resource operation"),
    pytest.param(rule(operations=["UPDATE"]), ATTRS, False, id="other operation"),
    pytest.param(rule(operations=["*"]), ATTRS, True, id="operation wildcard"),
    pytest.param(rule(apiGroups=["apps"]), ATTRS, False, id="other group"),
    pytest.param(rule(apiGroups=["*"]), ATTRS, True, id="group wildcard"),
    pytest.param(rule(apiVersions=["v2"]), ATTRS, False, id="other version"),
    pytest.param(rule(resources=["secrets"]), ATTRS, False, id="other resource"),
    pytest.param(rule(resources=["*"]), ATTRS, True, id="resource wildcard"),
    pytest.param(
        rule(resources=["*"], operations=["*"]),
        STATUS,
        False,
        id="resource wildcard excludes subresources",
    ),
    pytest.param(
        rule(resources=["*/*"], operations=["*"]), STATUS, True, id="all resources and subresources"
    ),
    pytest.param(
        rule(resources=["configmaps/status"], operations=["*"]),
        STATUS,
        True,
        id="named subresource",
    ),
    pytest.param(
        rule(resources=["configmaps"], operations=["*"]),
        STATUS,
        False,
        id="main resource rule excludes its subresources",
    ),
    pytest.param(
        rule(resources=["configmaps/*"], operations=["*"]), STATUS, True, id="subresource wildcard"
    ),
    pytest.param(
        rule(scope="Namespaced"), ATTRS, True, id="namespaced scope on a namespaced object"
    ),
    pytest.param(rule(scope="Cluster"), ATTRS, False, id="cluster scope on a namespaced object"),
    pytest.param(
        rule(resources=["namespaces"], scope="Cluster"),
        dataclasses.replace(ATTRS, resource="namespaces", namespace="new", name="new"),
        True,
        id="namespaces are cluster-scoped",
    ),
    pytest.param(
        rule(resources=["namespaces"], scope="Namespaced"),
        dataclasses.replace(ATTRS, resource="namespaces", namespace="new", name="new"),
        False,
        id="namespaces never match the namespaced scope",
    ),
]


@pytest.mark.parametrize(("one_rule", "attrs", "matches"), RULE_CASES)
def test_rule_matching(one_rule: dict[str, Any], attrs: AdmissionAttributes, matches: bool) -> None:
    assert rule_matches(one_rule, attrs, equivalent=False) is matches


def test_equivalent_match_policy_accepts_another_version_and_exact_does_not() -> None:
    v1beta1 = [rule(apiVersions=["v1beta1"])]
    assert rules_match({"rules": v1beta1}, ATTRS)
    assert not rules_match({"rules": v1beta1, "matchPolicy": "Exact"}, ATTRS)


def test_validating_webhooks_run_concurrently(webhook: Any) -> None:
    hooks = [
        hook(f"slow{i}.example.com", webhook.url("/slow"), webhook.ca_bundle, timeoutSeconds=5)
        for i in range(3)
    ]
    loop_time: list[float] = []

    async def timed(chain: AdmissionChain) -> list[str]:
        start = asyncio.get_running_loop().time()
        warnings = await chain.validate(ATTRS)
        loop_time.append(asyncio.get_running_loop().time() - start)
        return warnings

    run([], [config("v", *hooks)], timed)
    assert loop_time[0] < 4.0  # three 1.5 s webhooks, concurrently


def test_if_needed_webhook_is_reinvoked_after_a_later_change(webhook: Any) -> None:
    webhook.calls.clear()
    first = config(
        "a",
        hook(
            "reinvoked.example.com",
            webhook.url("/allow"),
            webhook.ca_bundle,
            reinvocationPolicy="IfNeeded",
        ),
    )
    second = config("b", hook("patch.example.com", webhook.url("/patch"), webhook.ca_bundle))
    mutated = run([first, second], [], lambda chain: chain.mutate(ATTRS))
    assert mutated is not None and mutated["metadata"]["labels"] == {"patched": "yes"}
    assert [path.split("?")[0] for path, _, _ in webhook.calls] == ["/allow", "/patch", "/allow"]
    assert webhook.calls[-1][2]["request"]["object"]["metadata"]["labels"] == {"patched": "yes"}


def test_never_reinvoked_by_default(webhook: Any) -> None:
    webhook.calls.clear()
    first = config("a", hook("once.example.com", webhook.url("/allow"), webhook.ca_bundle))
    second = config("b", hook("patch.example.com", webhook.url("/patch"), webhook.ca_bundle))
    run([first, second], [], lambda chain: chain.mutate(ATTRS))
    assert [path.split("?")[0] for path, _, _ in webhook.calls] == ["/allow", "/patch"]


def test_service_that_cannot_be_resolved_fails_the_call(webhook: Any) -> None:
    async def resolve(namespace: str, name: str, port: int) -> tuple[str, int]:
        raise LookupError(f'services "{name}" not found')

    service_hook = hook("svc.example.com", "", webhook.ca_bundle)
    service_hook["clientConfig"] = {"service": {"namespace": "webhooks", "name": "missing"}}

    async def step(chain: AdmissionChain) -> list[str]:
        return await chain.validate(ATTRS)

    with pytest.raises(StatusError) as info:
        run([], [config("v", service_hook)], step, resolve)
    assert info.value.message == (
        'Internal error occurred: failed calling webhook "svc.example.com": '
        'failed to call webhook: services "missing" not found'
    )
