"""Admission through the local API server, as kubectl users see it."""

from __future__ import annotations

import json
import uuid
from typing import Any


def _configuration(webhook: Any, path: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": f"cfg-{name}"},
        "webhooks": [
            {
                "name": name,
                "clientConfig": {"url": webhook.url(path), "caBundle": webhook.ca_bundle},
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["configmaps"],
                        "operations": ["CREATE"],
                    }
                ],
                "objectSelector": {"matchLabels": {"test": name}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }


def _configmap(name: str, label: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": {"test": label}},
        }
    )


def test_kubectl_create_shows_the_webhook_denial(local_server: Any, webhook: Any) -> None:
    hook_name = f"deny-{uuid.uuid4().hex[:6]}.example.com"
    created = local_server.kubectl(
        "create", "-f", "-", stdin=json.dumps(_configuration(webhook, "/deny-plain", hook_name))
    )
    assert created.returncode == 0, created.stderr
    try:
        denied = local_server.kubectl("create", "-f", "-", stdin=_configmap("denied", hook_name))
        assert denied.returncode != 0
        assert (
            f'admission webhook "{hook_name}" denied the request: not on my watch' in denied.stderr
        )
        assert denied.stderr.startswith("Error from server: ")
    finally:
        local_server.kubectl("delete", "validatingwebhookconfiguration", f"cfg-{hook_name}")


def test_kubectl_create_passes_an_allowing_webhook_and_prints_its_warning(
    local_server: Any, webhook: Any
) -> None:
    hook_name = f"allow-{uuid.uuid4().hex[:6]}.example.com"
    created = local_server.kubectl(
        "create", "-f", "-", stdin=json.dumps(_configuration(webhook, "/allow", hook_name))
    )
    assert created.returncode == 0, created.stderr
    try:
        name = f"allowed-{uuid.uuid4().hex[:6]}"
        allowed = local_server.kubectl("create", "-f", "-", stdin=_configmap(name, hook_name))
        assert allowed.returncode == 0, allowed.stderr
        assert "Warning: looks fine" in allowed.stderr
    finally:
        local_server.kubectl("delete", "validatingwebhookconfiguration", f"cfg-{hook_name}")


def test_kubectl_shows_the_causes_of_an_invalid_denial(local_server: Any, webhook: Any) -> None:
    hook_name = f"invalid-{uuid.uuid4().hex[:6]}.example.com"
    created = local_server.kubectl(
        "create", "-f", "-", stdin=json.dumps(_configuration(webhook, "/deny", hook_name))
    )
    assert created.returncode == 0, created.stderr
    try:
        denied = local_server.kubectl("create", "-f", "-", stdin=_configmap("invalid", hook_name))
        assert denied.returncode != 0
        # kubectl renders a 422 with causes (and no kind/name) from their messages, as with kube.
        assert "spec.x: Required value" in denied.stderr
    finally:
        local_server.kubectl("delete", "validatingwebhookconfiguration", f"cfg-{hook_name}")


def test_kubectl_shows_an_unreachable_webhook_as_an_internal_error(
    local_server: Any, webhook: Any, unused_port: int
) -> None:
    hook_name = f"unreachable-{uuid.uuid4().hex[:6]}.example.com"
    configuration = _configuration(webhook, "/allow", hook_name)
    url = f"https://127.0.0.1:{unused_port}/allow"
    configuration["webhooks"][0]["clientConfig"]["url"] = url
    created = local_server.kubectl("create", "-f", "-", stdin=json.dumps(configuration))
    assert created.returncode == 0, created.stderr
    try:
        failed = local_server.kubectl("create", "-f", "-", stdin=_configmap("nope", hook_name))
        assert failed.returncode != 0
        assert failed.stderr.startswith("Error from server (InternalError): ")
        assert (
            f'Internal error occurred: failed calling webhook "{hook_name}": failed to call '
            f'webhook: Post "{url}?timeout=10s": dial tcp 127.0.0.1:{unused_port}: connect: '
            "connection refused"
        ) in failed.stderr
    finally:
        local_server.kubectl("delete", "validatingwebhookconfiguration", f"cfg-{hook_name}")


def test_server_dry_run_is_refused_by_a_webhook_with_side_effects(
    local_server: Any, webhook: Any
) -> None:
    hook_name = f"effects-{uuid.uuid4().hex[:6]}.example.com"
    configuration = _configuration(webhook, "/allow", hook_name)
    configuration["webhooks"][0]["sideEffects"] = "Some"
    created = local_server.kubectl("create", "-f", "-", stdin=json.dumps(configuration))
    if created.returncode != 0:
        # kube-apiserver only accepts None/NoneOnDryRun in admissionregistration/v1.
        assert "sideEffects" in created.stderr
        return
    try:
        refused = local_server.kubectl(
            "create", "--dry-run=server", "-f", "-", stdin=_configmap("dry", hook_name)
        )
        assert refused.returncode != 0
        assert f'admission webhook "{hook_name}" does not support dry run' in refused.stderr
    finally:
        local_server.kubectl("delete", "validatingwebhookconfiguration", f"cfg-{hook_name}")
