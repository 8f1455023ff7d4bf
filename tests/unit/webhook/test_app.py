"""The admission endpoints' wire behaviour (admission.md "Wire behaviour"), health and metrics,
through the ASGI app."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import jsonpatch
import pytest

from shared import labels
from shared.models import Queue
from webhook import admission
from webhook.app import create_app, create_health_app, create_metrics_app, webhook_state
from webhook.job import review as review_module
from webhook.job.rules.wording import IMMUTABLE
from webhook.queueview import QUEUE_SKIPPED_WARNING
from webhook.settings import Settings

pytestmark = pytest.mark.anyio

MUTATE = labels.MUTATE_PATH
VALIDATE = labels.VALIDATE_PATH
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "demo", "namespace": "ns"},
        "spec": {
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
            **spec,
        },
    }


def review(obj: Any = None, operation: str = "CREATE", **request: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"},
        "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"},
        "operation": operation,
        "namespace": "ns",
        "object": job() if obj is None else obj,
    }
    req.update(request)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


class FakeQueues:
    def __init__(self, crd_installed: bool = True, synced: bool = True) -> None:
        self.crd_installed = crd_installed
        self.synced = synced
        self.queues = {"default": Queue.from_wire({"metadata": {"name": "default"}})}

    def get(self, name: str) -> Queue | None:
        return self.queues.get(name)

    def children(self, name: str) -> list[str]:
        return []


@pytest.fixture
def queues() -> FakeQueues:
    return FakeQueues()


@pytest.fixture
def settings() -> Settings:
    return Settings(scheduler_name="volcano")


@pytest.fixture
async def client(settings: Settings, queues: FakeQueues) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, queues)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://webhook") as c:
        c.app = app  # type: ignore[attr-defined]
        yield c


async def post(client: httpx.AsyncClient, path: str, body: Any) -> httpx.Response:
    return await client.post(path, content=json.dumps(body), headers=JSON)


async def test_valid_job_is_allowed_and_the_uid_echoed(client: httpx.AsyncClient) -> None:
    response = await post(client, VALIDATE, review())
    assert response.status_code == 200
    assert response.json() == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": True},
    }


async def test_denial_lists_every_problem_with_its_path(client: httpx.AsyncClient) -> None:
    body = review(job(minAvailable=5, queue="missing", maxRetry=-1))
    answer = (await post(client, VALIDATE, body)).json()["response"]
    assert answer["allowed"] is False
    status = answer["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    messages = [
        "spec.minAvailable: Invalid value: 5: job 'minAvailable' should not be greater than total "
        "replicas (2, the sum of the tasks' replicas)",
        'spec.queue: Not found: "missing": no Queue of this name exists',
        "spec.maxRetry: Invalid value: -1: should be greater than or equal to 0",
    ]
    assert status["message"] == "; ".join(messages)
    causes = status["details"]["causes"]
    assert [f"{c['field']}: {c['message']}" for c in causes] == messages
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec.minAvailable",
        "spec.queue",
        "spec.maxRetry",
    ]
    assert status["details"]["causes"][1]["reason"] == "FieldValueNotFound"


async def test_mutation_patches_the_defaults(client: httpx.AsyncClient) -> None:
    raw = job()
    answer = (await post(client, MUTATE, review(raw))).json()["response"]
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(answer["patch"]))
    patched = jsonpatch.apply_patch(raw, patch)
    assert patched["spec"]["queue"] == "default"
    assert patched["spec"]["schedulerName"] == "volcano"
    assert patched["spec"]["minAvailable"] == 2
    assert patched["spec"]["tasks"][0]["maxRetry"] == 3


async def test_no_patch_when_nothing_changes_volcano_bug_17(client: httpx.AsyncClient) -> None:
    raw = job(queue="q", schedulerName="s", maxRetry=1, minAvailable=1)
    raw["spec"]["tasks"][0].update(minAvailable=1, maxRetry=1)
    answer = (await post(client, MUTATE, review(raw))).json()["response"]
    assert answer == {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": True}


async def test_mutation_keeps_unknown_fields_volcano_bug_16(client: httpx.AsyncClient) -> None:
    raw = job(plugins={"svc": []})
    raw["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["futureField"] = 1
    answer = (await post(client, MUTATE, review(raw))).json()["response"]
    patch = json.loads(base64.b64decode(answer["patch"]))
    assert all(op["op"] == "add" for op in patch)
    assert not any(op["path"] in ("/spec/tasks", "/spec/plugins") for op in patch)


async def test_garbage_object_is_denied_with_what_could_not_be_read(
    client: httpx.AsyncClient,
) -> None:
    for path in (MUTATE, VALIDATE):
        response = await post(
            client, path, review({"metadata": {"name": "j"}, "spec": {"tasks": "x"}})
        )
        assert response.status_code == 200
        answer = response.json()["response"]
        assert answer["allowed"] is False
        assert answer["status"]["message"] == 'spec.tasks: Invalid value: "x": must be a list'


def causes(answer: dict[str, Any]) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in answer["status"]["details"]["causes"]]


async def test_a_bad_quantity_is_answered_by_the_mutating_hook_with_every_problem(
    client: httpx.AsyncClient,
) -> None:
    """kube-apiserver checks the CRD's schema between the two hooks, and the schema refuses
    `cpu: lots` with its regex alone: the mutating hook, which sees the Job first, answers with
    the quantity and every other problem, as the validating hook would."""
    raw = job(minAvailable=5)
    container = raw["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "lots"}}
    mutated = (await post(client, MUTATE, review(raw))).json()["response"]
    assert mutated["allowed"] is False
    assert "patch" not in mutated
    assert causes(mutated) == [
        'spec.tasks[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "lots": '
        "must be a quantity such as 500m, 2 or 1Gi",
        "spec.minAvailable: Invalid value: 5: job 'minAvailable' should not be greater than total "
        "replicas (2, the sum of the tasks' replicas)",
    ]
    assert mutated["status"]["message"] == "; ".join(causes(mutated))
    validated = (await post(client, VALIDATE, review(raw))).json()["response"]
    assert validated["status"] == mutated["status"]


async def test_a_type_error_is_answered_with_every_other_problem_at_once(
    client: httpx.AsyncClient,
) -> None:
    raw = job(queue="missing")
    raw["metadata"]["name"] = "Bad_Job"
    raw["spec"]["tasks"][0]["replicas"] = "two"
    raw["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"memory": 0.5}
    }
    mutated = (await post(client, MUTATE, review(raw))).json()["response"]
    assert mutated["allowed"] is False
    problems = causes(mutated)
    assert problems == [
        'metadata.name: Invalid value: "Bad_Job": a lowercase RFC 1123 label must consist of '
        "lower case alphanumeric characters or '-', and must start and end with an alphanumeric "
        "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'spec.tasks[0].replicas: Invalid value: "two": must be an integer',
        "spec.tasks[0].template.spec.containers[0].resources.limits[memory]: Invalid value: 0.5: "
        'must be an integer or a string: write a fraction as a string, such as "0.5" or 500m',
        'spec.queue: Not found: "missing": no Queue of this name exists',
    ]


async def test_a_job_the_schema_accepts_is_left_to_the_validating_hook(
    client: httpx.AsyncClient,
) -> None:
    """The mutating hook denies only what the CRD's schema would refuse before the validating
    hook could answer; a rule the schema cannot check stays the validating hook's."""
    raw = job(minAvailable=5)
    mutated = (await post(client, MUTATE, review(raw))).json()["response"]
    assert mutated["allowed"] is True
    assert mutated["patchType"] == "JSONPatch"


async def test_missing_object_is_denied(client: httpx.AsyncClient) -> None:
    body = review()
    del body["request"]["object"]
    answer = (await post(client, VALIDATE, body)).json()["response"]
    assert answer["status"]["message"] == "Invalid value: null: must be a Job object"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        pytest.param(b"{not json", "the body is not JSON", id="not-json"),
        pytest.param(b"[1, 2]", "expected a JSON object", id="not-an-object"),
        pytest.param(b'{"kind": "AdmissionReview"}', "request is missing", id="no-request"),
        pytest.param(
            b'{"request": {"operation": "CREATE"}}', "request.uid is missing", id="no-uid"
        ),
        pytest.param(b'{"request": {"uid": 7}}', "request.uid is missing", id="uid-not-string"),
        pytest.param(b"\xff\xfe", "the body is not JSON", id="not-utf8"),
    ],
)
async def test_non_reviews_get_400_json(client: httpx.AsyncClient, body: bytes, error: str) -> None:
    for path in (MUTATE, VALIDATE):
        response = await client.post(path, content=body, headers=JSON)
        assert response.status_code == 400
        assert error in response.json()["error"]


async def test_body_over_3_mib_gets_413(client: httpx.AsyncClient) -> None:
    big = review(job(padding="x" * (3 * 1024 * 1024)))
    response = await post(client, VALIDATE, big)
    assert response.status_code == 413
    assert "larger than 3145728 bytes" in response.json()["error"]


@pytest.mark.parametrize(
    "content_type",
    [
        pytest.param("text/plain", id="text"),
        pytest.param("application/xml", id="xml"),
        pytest.param(None, id="missing"),
    ],
)
async def test_wrong_content_type_gets_415_volcano_bug_18(
    client: httpx.AsyncClient, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = await client.post(VALIDATE, content=json.dumps(review()), headers=headers)
    assert response.status_code == 415
    assert "application/json" in response.json()["error"]


async def test_curl_data_file_without_a_content_type_header_is_read_as_json(
    client: httpx.AsyncClient,
) -> None:
    """`curl -d @review.json` labels the body application/x-www-form-urlencoded."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    response = await client.post(VALIDATE, content=json.dumps(review()), headers=headers)
    assert response.status_code == 200
    assert response.json()["response"]["allowed"] is True


async def test_json_nested_too_deeply_gets_400_not_500(client: httpx.AsyncClient) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    for path in (MUTATE, VALIDATE):
        response = await client.post(path, content=deep, headers=JSON)
        assert response.status_code == 400
        assert "nested too deeply" in response.json()["error"]


async def test_json_with_charset_is_accepted(client: httpx.AsyncClient) -> None:
    response = await client.post(
        VALIDATE,
        content=json.dumps(review()),
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert response.json()["response"]["allowed"] is True


@pytest.mark.parametrize(
    ("path", "request_fields", "message"),
    [
        pytest.param(
            VALIDATE,
            {"resource": {"group": "", "version": "v1", "resource": "pods"}},
            "expected resource batch.volcano.sh/v1alpha1 jobs, got core/v1 pods",
            id="other-resource",
        ),
        pytest.param(
            VALIDATE,
            {"subResource": "status"},
            "expected the jobs resource itself, got its subresource 'status'",
            id="subresource",
        ),
        pytest.param(
            VALIDATE,
            {"operation": "DELETE"},
            "expected operation CREATE or UPDATE, got 'DELETE'",
            id="validate-delete",
        ),
        pytest.param(
            MUTATE,
            {"operation": "UPDATE"},
            "expected operation CREATE, got 'UPDATE'",
            id="mutate-update",
        ),
    ],
)
async def test_other_resources_and_operations_are_denied(
    client: httpx.AsyncClient, path: str, request_fields: dict[str, Any], message: str
) -> None:
    body = review()
    body["request"].update(request_fields)
    response = await post(client, path, body)
    assert response.status_code == 200
    answer = response.json()["response"]
    assert answer["allowed"] is False
    assert answer["status"]["message"] == message


async def test_dry_run_is_handled_the_same(client: httpx.AsyncClient) -> None:
    allowed = await post(client, VALIDATE, review(dryRun=True))
    denied = await post(client, VALIDATE, review(job(minAvailable=9), dryRun=True))
    assert allowed.json()["response"]["allowed"] is True
    assert denied.json()["response"]["allowed"] is False


async def test_update_is_validated(client: httpx.AsyncClient) -> None:
    old = job(queue="default")
    new = copy.deepcopy(old)
    new["spec"]["queue"] = "other"
    answer = (await post(client, VALIDATE, review(new, "UPDATE", oldObject=old))).json()
    assert answer["response"]["status"]["message"] == (
        f'spec.queue: Invalid value: "other": {IMMUTABLE}'
    )


async def test_queue_check_skipped_with_a_warning_without_the_crd(settings: Settings) -> None:
    app = create_app(settings, FakeQueues(crd_installed=False))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://w") as c:
        ok = (await post(c, VALIDATE, review(job(queue="anything")))).json()["response"]
        denied = (await post(c, VALIDATE, review(job(queue="x", maxRetry=-1)))).json()["response"]
    assert ok["allowed"] is True
    assert ok["warnings"] == [QUEUE_SKIPPED_WARNING]
    assert denied["allowed"] is False
    assert denied["warnings"] == [QUEUE_SKIPPED_WARNING]


async def test_queue_check_off_skips_silently() -> None:
    app = create_app(Settings(queue_check=False), FakeQueues())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://w") as c:
        answer = (await post(c, VALIDATE, review(job(queue="anything")))).json()["response"]
    assert answer == {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": True}


async def test_an_internal_failure_is_a_denial_not_a_5xx(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*_: Any) -> list[Any]:
        raise RuntimeError("boom")

    monkeypatch.setattr(review_module, "validate_create", explode)
    response = await post(client, VALIDATE, review())
    assert response.status_code == 200
    answer = response.json()["response"]
    assert answer["allowed"] is False
    assert answer["status"]["message"] == (
        "the webhook could not evaluate the request: RuntimeError"
    )


async def test_only_post_is_routed(client: httpx.AsyncClient) -> None:
    response = await client.get(VALIDATE)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["error"] == (
        f"GET is not allowed at {VALIDATE}: an admission webhook takes an AdmissionReview by POST"
    )


@pytest.mark.parametrize("path", ["/validate", "/mutate-batch-volcano-sh-v1alpha1-jobs", "/"])
async def test_a_wrong_path_is_answered_with_the_paths_served(
    client: httpx.AsyncClient, path: str
) -> None:
    response = await post(client, path, review())
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["code"] == 404
    assert body["error"].startswith(
        f"no admission webhook at {path}; this webhook serves POST at: "
    )
    assert {MUTATE, VALIDATE, "/queues/validate", "/pods/validate"} <= set(body["paths"])
    assert all(p in body["error"] for p in body["paths"])


async def test_metrics_count_requests_by_code_and_result(client: httpx.AsyncClient) -> None:
    await post(client, VALIDATE, review())
    await post(client, VALIDATE, review(job(minAvailable=9)))
    await client.post(VALIDATE, content=b"nope", headers=JSON)
    state = webhook_state(client.app)  # type: ignore[attr-defined]
    metrics_app = create_metrics_app(state)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=metrics_app), base_url="http://m"
    ) as m:
        text = (await m.get("/metrics")).text
    assert (
        f'controller_runtime_webhook_requests_total{{code="200",webhook="{VALIDATE}"}} 2.0' in text
    )
    assert (
        f'controller_runtime_webhook_requests_total{{code="400",webhook="{VALIDATE}"}} 1.0' in text
    )
    for result in ("allowed", "denied", "error"):
        assert (
            f'vcjob_webhook_admission_total{{result="{result}",webhook="{VALIDATE}"}} 1.0' in text
        )
    assert f'controller_runtime_webhook_latency_seconds_count{{webhook="{VALIDATE}"}} 3.0' in text


async def test_health_and_readiness(settings: Settings, queues: FakeQueues) -> None:
    app = create_app(settings, queues)
    state = webhook_state(app)
    health = create_health_app(state)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=health), base_url="http://h"
    ) as h:
        assert (await h.get("/healthz")).status_code == 200
        not_serving = await h.get("/readyz")
        assert not_serving.status_code == 503
        assert not_serving.json()["reason"] == "the TLS listener is not serving yet"
        state.serving.set()
        assert (await h.get("/readyz")).status_code == 200
        queues.synced = False
        unsynced = await h.get("/readyz")
        assert unsynced.status_code == 503
        assert unsynced.json()["reason"] == "the Queue cache has not synced yet"
        queues.synced = True
        state.shutting_down.set()
        draining = await h.get("/readyz")
        assert (draining.status_code, draining.json()["reason"]) == (503, "shutting down")
        assert (await h.get("/healthz")).status_code == 200


async def test_denials_are_logged_with_context(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="webhook.app")
    await post(client, VALIDATE, review(job(minAvailable=9)))
    await post(client, VALIDATE, review())
    records = [r for r in caplog.records if r.name == "webhook.app"]
    assert [r.getMessage() for r in records] == ["admission denied"]
    assert records[0].job == "demo"  # type: ignore[attr-defined]
    assert records[0].admission_uid == "705ab4f5-6393-11e8-b7cc-42010a800002"  # type: ignore[attr-defined]
    assert "spec.minAvailable" in records[0].denial  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# Hardening: read deadline, concurrency bound, client disconnects, deep nesting


def _scope(path: str = VALIDATE) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"100")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 9443),
    }


async def _call(app: Any, receive: Any) -> tuple[int, dict[str, str], bytes]:
    """Run one request through the ASGI app; its status, headers and body."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope(), receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers, body


def _stalled_receive(first: bytes = b'{"request": ') -> Any:
    """A client that sends the start of its body, then nothing more."""
    calls = 0

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"type": "http.request", "body": first, "more_body": True}
        await anyio.sleep(3600)
        raise AssertionError("unreachable")

    return receive


async def test_a_stalled_body_gets_408_at_the_read_deadline() -> None:
    app = create_app(Settings(queue_check=False, read_timeout=0.2), None)
    with anyio.fail_after(5):
        status, headers, body = await _call(app, _stalled_receive())
    assert status == 408
    assert "not received within 0.2 seconds" in json.loads(body)["error"]
    assert headers["connection"] == "close"
    assert webhook_state(app).in_flight == 0


async def test_beyond_the_concurrency_bound_a_fast_429() -> None:
    app = create_app(Settings(queue_check=False, read_timeout=30, max_concurrent_requests=2), None)
    state = webhook_state(app)
    async with anyio.create_task_group() as group:
        for _ in range(2):
            group.start_soon(_call, app, _stalled_receive())
        with anyio.fail_after(5):
            while state.in_flight < 2:
                await anyio.sleep(0.01)
            status, headers, body = await _call(app, _stalled_receive())
        assert status == 429
        assert headers["retry-after"] == "1"
        assert "answering 2 requests already" in json.loads(body)["error"]
        group.cancel_scope.cancel()
    assert state.in_flight == 0
    assert (
        state.metrics.registry.get_sample_value(
            "vcjob_webhook_rejected_total", {"reason": "too_many"}
        )
        == 1
    )


async def test_a_client_gone_mid_body_is_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(Settings(queue_check=False), None)
    calls = 0

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"type": "http.request", "body": b'{"req', "more_body": True}
        return {"type": "http.disconnect"}

    caplog.set_level("INFO", logger="webhook.app")
    await _call(app, receive)
    records = [r for r in caplog.records if r.name == "webhook.app"]
    assert [r.getMessage() for r in records] == [
        "client disconnected before sending the whole body"
    ]
    assert records[0].exc_info is None


@pytest.mark.parametrize("levels", [101, 500, 5000])
async def test_deep_nesting_is_refused_naming_the_limit(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, levels: int
) -> None:
    obj = job()
    obj["metadata"]["annotations"] = "DEEP"
    deep = '{"a":' * levels + '"x"' + "}" * levels
    body = json.dumps(review(obj)).replace('"DEEP"', deep)
    caplog.set_level("DEBUG")
    response = await client.post(VALIDATE, content=body, headers=JSON)
    assert not any(r.exc_info for r in caplog.records)
    if response.status_code == 400:  # too deep for the JSON decoder itself: not a review
        message = response.json()["error"]
    else:
        assert response.status_code == 200
        answer = response.json()["response"]
        assert answer["allowed"] is False
        message = answer["status"]["message"]
    assert "more than 100 levels (the webhook's limit)" in message


def test_depth_counts_containers() -> None:
    assert admission.depth("x") == 0
    assert admission.depth([]) == 1
    assert admission.depth({"a": [1, {"b": {}}]}) == 4


async def test_metrics_have_process_series_and_no_created_series(
    client: httpx.AsyncClient,
) -> None:
    await post(client, VALIDATE, review())
    state = webhook_state(client.app)  # type: ignore[attr-defined]
    from prometheus_client import generate_latest

    text = generate_latest(state.metrics.registry).decode()
    assert "process_resident_memory_bytes" in text
    assert "controller_runtime_webhook_requests_total" in text
    assert "_created" not in text


def test_the_in_flight_gauge_reads_the_requests_being_handled() -> None:
    state = webhook_state(create_app(Settings(queue_check=False), None))
    registry = state.metrics.registry
    assert registry.get_sample_value("vcjob_webhook_requests_in_flight") == 0
    state.in_flight = 3
    assert registry.get_sample_value("vcjob_webhook_requests_in_flight") == 3
