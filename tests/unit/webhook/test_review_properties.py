"""Property: whatever the body, the webhook answers without an exception and never with 5xx;
every well-formed review gets 200 with its uid echoed."""

from __future__ import annotations

import copy
import json
from typing import Any

import anyio
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import labels
from webhook.admission import Kind
from webhook.app import create_app
from webhook.job import review
from webhook.settings import Settings

SETTINGS = Settings()
KEYS = [
    "name", "replicas", "minAvailable", "maxRetry", "tasks", "template", "spec", "containers",
    "image", "policies", "event", "events", "exitCode", "action", "timeout", "plugins", "queue",
    "volumes", "mountPath", "volumeClaim", "volumeClaimName", "successPolicy", "rules",
    "taskName", "succeededIndexes", "succeededCount", "dependsOn", "minReplicas", "maxReplicas",
    "topologyPolicy", "resources", "limits", "requests", "cpu", "ports", "containerPort", "env",
    "metadata", "status", "state", "phase",
]  # fmt: skip
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["*", "PodFailed", "AbortJob", "0-3", "1,1", "500m", "--master=x", ""])
)
keys = st.sampled_from(KEYS) | st.text(max_size=6)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=15,
)


def valid_job() -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "busybox",
        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},
        "ports": [{"containerPort": 80, "name": "web"}],
        "env": [{"name": "A", "value": "b"}],
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "minAvailable": 2,
            "queue": "default",
            "plugins": {"mpi": ["--master=master"], "svc": []},
            "policies": [{"event": "PodEvicted", "action": "RestartJob", "timeout": "1m"}],
            "volumes": [{"mountPath": "/d", "volumeClaimName": "data"}],
            "successPolicy": {"rules": [{"taskName": "master", "succeededIndexes": "0"}]},
            "tasks": [
                {
                    "name": "master",
                    "replicas": 1,
                    "template": {"spec": {"containers": [container]}},
                },
                {
                    "name": "worker",
                    "replicas": 2,
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "dependsOn": {"name": ["master"]},
                    "policies": [{"exitCode": 3, "action": "RestartTask"}],
                    "template": {"spec": {"containers": [copy.deepcopy(container)]}},
                },
            ],
        },
    }


def envelope(operation: Any, obj: Any, old: Any = None) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"},
            "operation": operation,
            "object": obj,
            "oldObject": old,
        },
    }


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


@st.composite
def mutated_jobs(draw: st.DrawFn) -> dict[str, Any]:
    job = valid_job()
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = [p for p in _paths(job) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = job
        for part in path[:-1]:
            parent = parent[part]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    return job


def check(kind: Kind, body: bytes) -> None:
    answer = review.answer(kind, body, SETTINGS, lambda: (None, None))
    assert answer.status < 500
    try:
        sent = json.loads(body)
    except ValueError:
        sent = None
    request = sent.get("request") if isinstance(sent, dict) else None
    if isinstance(request, dict) and isinstance(request.get("uid"), str) and request["uid"]:
        assert answer.status == 200
        assert answer.body["response"]["uid"] == request["uid"]
        assert isinstance(answer.body["response"]["allowed"], bool)
        json.dumps(answer.body)  # serialisable


OPERATIONS = st.sampled_from(["CREATE", "UPDATE"]) | json_values


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(list(Kind)), operation=OPERATIONS, obj=mutated_jobs(), old=mutated_jobs()
)
def test_mutated_jobs_never_fail_the_webhook(
    kind: Kind, operation: Any, obj: dict[str, Any], old: dict[str, Any]
) -> None:
    check(kind, json.dumps(envelope(operation, obj, old)).encode())


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(list(Kind)), body=json_values)
def test_random_json_bodies_never_fail_the_webhook(kind: Kind, body: Any) -> None:
    check(kind, json.dumps(body).encode())


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(list(Kind)),
    request=st.dictionaries(keys | st.just("uid"), json_values, max_size=6),
)
def test_random_requests_never_fail_the_webhook(kind: Kind, request: dict[str, Any]) -> None:
    request.setdefault("uid", "u-2")
    check(kind, json.dumps({"request": request}).encode())


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(list(Kind)), body=st.binary(max_size=64))
def test_random_bytes_never_fail_the_webhook(kind: Kind, body: bytes) -> None:
    check(kind, body)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from([labels.MUTATE_PATH, labels.VALIDATE_PATH]),
    obj=mutated_jobs(),
    content_type=st.sampled_from(["application/json", "text/plain", ""]),
)
def test_the_http_layer_never_answers_5xx(
    path: str, obj: dict[str, Any], content_type: str
) -> None:
    app = create_app(SETTINGS, None)

    async def send() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="https://w") as client:
            response = await client.post(
                path,
                content=json.dumps(envelope("CREATE", obj)),
                headers={"Content-Type": content_type} if content_type else {},
            )
        return response.status_code

    assert anyio.run(send) in (200, 415)
