"""The server calls admission webhooks in kube's order and reports denials and warnings."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from shared import certgen

Kubectl = Any


async def _webhook_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    review = json.loads(body)
    request = review["request"]
    response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
    name = request["object"]["metadata"].get("name", "")
    if scope["path"] == "/mutate":
        patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    elif name == "denied":
        response = {
            "uid": request["uid"],
            "allowed": False,
            "status": {"code": 403, "message": "nope"},
        }
    else:
        response["warnings"] = ["looked at it"]
    payload = json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": payload})


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, bytes]]:
    directory: Path = tmp_path_factory.mktemp("webhook")
    bundle = certgen.issue(["127.0.0.1", "localhost"])
    certgen.write_bundle(bundle, directory)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        _webhook_app,
        lifespan="off",
        log_config=None,
        log_level="warning",
        ssl_certfile=str(directory / certgen.CERT_FILE),
        ssl_keyfile=str(directory / certgen.KEY_FILE),
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield port, bundle.ca.cert_pem
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _configuration(kind: str, path: str, port: int, ca: bytes) -> str:
    hook = {
        "name": f"{path}.example.com",
        "clientConfig": {
            "url": f"https://127.0.0.1:{port}/{path}",
            "caBundle": base64.b64encode(ca).decode(),
        },
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],
        "objectSelector": {"matchLabels": {"hooked": "yes"}} if path == "mutate" else {},
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "hooked"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
    }
    return json.dumps(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": path},
            "webhooks": [hook],
        }
    )


def test_mutation_validation_denial_and_warnings(
    kubectl: Kubectl, webhook: tuple[int, bytes]
) -> None:
    port, ca = webhook
    kubectl.run("create", "namespace", "hooked")
    kubectl.run(
        "create",
        "-f",
        "-",
        stdin=_configuration("MutatingWebhookConfiguration", "mutate", port, ca),
    )
    kubectl.run(
        "create",
        "-f",
        "-",
        stdin=_configuration("ValidatingWebhookConfiguration", "validate", port, ca),
    )
    try:
        manifest = (
            "apiVersion: v1\nkind: ConfigMap\n"
            "metadata: {name: NAME, namespace: hooked, labels: {hooked: 'yes'}}\n"
        )
        created = kubectl.run("create", "-f", "-", stdin=manifest.replace("NAME", "fine"))
        assert "Warning: looked at it" in created.stderr
        labels = json.loads(kubectl.run("get", "cm", "fine", "-n", "hooked", "-o", "json").stdout)[
            "metadata"
        ]["labels"]
        assert labels == {"mutated": "yes"}, "the mutating webhook's JSON patch replaced the labels"
        denied = kubectl.run(
            "create", "-f", "-", stdin=manifest.replace("NAME", "denied"), check=False
        )
        assert 'admission webhook "validate.example.com" denied the request: nope' in denied.stderr
        kubectl.run("create", "configmap", "elsewhere")  # other namespaces are not matched
    finally:
        kubectl.run("delete", "mutatingwebhookconfiguration", "mutate")
        kubectl.run("delete", "validatingwebhookconfiguration", "validate")


def test_a_webhook_service_reaches_this_machine_and_must_exist(
    kubectl: Kubectl, webhook: tuple[int, bytes]
) -> None:
    """Nothing runs in pods here: a webhook Service listens on 127.0.0.1 at its own port."""
    port, ca = webhook
    configuration = json.loads(_configuration("ValidatingWebhookConfiguration", "svc", port, ca))
    hook = configuration["webhooks"][0]
    hook["clientConfig"] = {
        "service": {"namespace": "hooks", "name": "validator", "path": "/validate", "port": port},
        "caBundle": hook["clientConfig"]["caBundle"],
    }
    hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": "svc-hooked"}}
    kubectl.run("create", "namespace", "svc-hooked")
    kubectl.run("create", "-f", "-", stdin=json.dumps(configuration))
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: NAME, namespace: svc-hooked}\n"
    try:
        missing = kubectl.run("create", "-f", "-", stdin=manifest.replace("NAME", "a"), check=False)
        assert missing.returncode == 1
        assert (
            'failed calling webhook "svc.example.com": failed to call webhook: '
            'services "validator" not found' in missing.stderr
        )
        kubectl.run("create", "namespace", "hooks")
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "validator", "namespace": "hooks"},
            "spec": {"ports": [{"port": port}]},
        }
        kubectl.run("create", "-f", "-", stdin=json.dumps(service))
        # The certificate names 127.0.0.1 and localhost, not validator.hooks.svc: kube verifies
        # the Service's DNS name, so the call now reaches the webhook and fails verification.
        unverified = kubectl.run(
            "create", "-f", "-", stdin=manifest.replace("NAME", "b"), check=False
        )
        assert 'Post "https://validator.hooks.svc:' in unverified.stderr
        assert "tls: failed to verify" in unverified.stderr
    finally:
        kubectl.run("delete", "validatingwebhookconfiguration", "svc")
