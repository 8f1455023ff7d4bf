"""The webhook's HTTP layer: the admission endpoints, health, and metrics.

Three ASGI apps share one `WebhookState`: the admission app (served over TLS), the health app
(`/healthz`, `/readyz`) and the metrics app (`/metrics`), each on its own port. The admission
handlers read the raw body themselves, so FastAPI never answers 422 on their behalf.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    make_asgi_app,
)
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from shared import jsoncodec, labels
from webhook import objectreview
from webhook.admission import Answer, Kind, QueueLookup, Result, error_body
from webhook.clusterlookups import ClusterLookups
from webhook.cronjob import review as cronjob_review
from webhook.hypernode import review as hypernode_review
from webhook.job import podtemplate
from webhook.job import review as job_review
from webhook.jobflow import review as jobflow_review
from webhook.pod import review as pod_review
from webhook.podgroup import review as podgroup_review
from webhook.queue import review as queue_review
from webhook.queueview import QUEUE_SKIPPED_WARNING, QueueView
from webhook.settings import Settings

log = logging.getLogger(__name__)

AnswerFn = Callable[[Kind, bytes, Settings, QueueLookup], Answer]

# Volcano's other objects, at the paths of Volcano's webhook manager: path -> (kind, answer).
OBJECT_ROUTES: Final[dict[str, tuple[Kind, objectreview.ObjectAnswerFn]]] = {
    labels.QUEUE_MUTATE_PATH: (Kind.MUTATE, queue_review.answer),
    labels.QUEUE_VALIDATE_PATH: (Kind.VALIDATE, queue_review.answer),
    labels.PODGROUP_MUTATE_PATH: (Kind.MUTATE, podgroup_review.answer),
    labels.PODGROUP_VALIDATE_PATH: (Kind.VALIDATE, podgroup_review.answer),
    labels.POD_MUTATE_PATH: (Kind.MUTATE, pod_review.answer),
    labels.POD_VALIDATE_PATH: (Kind.VALIDATE, pod_review.answer),
    labels.HYPERNODE_VALIDATE_PATH: (Kind.VALIDATE, hypernode_review.answer),
}

# `application/x-www-form-urlencoded` is what `curl -d @review.json` sends for a JSON file: the
# body is still read as JSON, so testing the webhook by hand needs no extra header.
JSON_TYPES: Final = ("application/json", "application/x-www-form-urlencoded")


class QueueCacheLike(QueueView, Protocol):
    """What the app needs from the Queue cache (webhook.queuecache.QueueCache)."""

    @property
    def synced(self) -> bool: ...

    @property
    def crd_installed(self) -> bool: ...


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        # `_created` series double every counter and histogram and no dashboard reads them.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        ProcessCollector(registry=self.registry)
        self.requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Admission requests by webhook path and HTTP status code.",
            ["webhook", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Time to answer an admission request.",
            ["webhook"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=self.registry,
        )
        self.admissions = Counter(
            "vcjob_webhook_admission_total",
            "Admission outcomes: allowed, denied, or error (the body was not a review).",
            ["webhook", "result"],
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "vcjob_webhook_requests_in_flight",
            "Admission requests being read or answered right now.",
            registry=self.registry,
        )
        self.rejected = Counter(
            "vcjob_webhook_rejected_total",
            "Requests cut short: too_many (429), read_timeout (408) or disconnected.",
            ["reason"],
            registry=self.registry,
        )
        self._children: dict[tuple[str, int, str], tuple[Counter, Counter]] = {}

    def count(self, webhook: str, code: int, result: str) -> None:
        """Count one answer (the labelled children are looked up once, not per request)."""
        key = (webhook, code, result)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self.requests.labels(webhook=webhook, code=str(code)),
                self.admissions.labels(webhook=webhook, result=result),
            )
        for child in children:
            child.inc()


@dataclass
class WebhookState:
    settings: Settings
    queue_cache: QueueCacheLike | None
    # API reads for PodGroup and Queue admission (None: without an API server, skipped).
    cluster: ClusterLookups | None = None
    metrics: Metrics = field(default_factory=Metrics)
    shutting_down: threading.Event = field(default_factory=threading.Event)
    serving: threading.Event = field(default_factory=threading.Event)
    # Requests being handled; only the event loop's thread touches it.
    in_flight: int = 0

    def __post_init__(self) -> None:
        # Read at scrape time rather than kept in step on every request (two locked updates).
        self.metrics.in_flight.set_function(lambda: self.in_flight)

    def queue_lookup(self) -> tuple[QueueView | None, str | None]:
        if not self.settings.queue_check or self.queue_cache is None:
            return None, None
        if not self.queue_cache.crd_installed:
            return None, QUEUE_SKIPPED_WARNING
        return self.queue_cache, None

    def readiness(self) -> tuple[bool, str]:
        if self.shutting_down.is_set():
            return False, "shutting down"
        if not self.serving.is_set():
            return False, "the TLS listener is not serving yet"
        cache = self.queue_cache
        if self.settings.queue_check and cache is not None and not cache.synced:
            return False, "the Queue cache has not synced yet"
        return True, "ok"


def _content_type_ok(request: Request) -> bool:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media in JSON_TYPES


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is larger than `limit` bytes.

    Chunks are joined once at the end (one allocation of the final size) rather than grown in
    place, so a burst of large bodies leaves no half-used heap behind.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None
    return b"".join(chunks)


def _closing(answer: Answer) -> Response:
    """An answer sent before the body was read: the connection closes behind it, so the unread
    rest of the body is never buffered."""
    response = _json_response(answer)
    response.headers["connection"] = "close"
    return response


def _client(request: Request) -> str:
    client = request.client
    return f"{client.host}:{client.port}" if client else "unknown"


def _json_response(answer: Answer) -> Response:
    return Response(
        content=jsoncodec.dumps(answer.body),
        status_code=answer.status,
        media_type="application/json",
    )


def _log_answer(kind: Kind, answer: Answer) -> None:
    extra: dict[str, Any] = {"webhook": kind.value, "code": answer.status}
    response = answer.body.get("response")
    if isinstance(response, dict):
        extra["admission_uid"] = response.get("uid")
        status = response.get("status")
        if isinstance(status, dict):
            extra["denial"] = status.get("message")
            details = status.get("details")
            if isinstance(details, dict) and details.get("name"):
                extra["job"] = details["name"]
    else:
        extra["error"] = answer.body.get("error")
    if answer.result is Result.ALLOWED:
        log.debug("admission allowed", extra=extra)
    elif answer.result is Result.DENIED:
        log.info("admission denied", extra=extra)
    else:
        log.warning("not an admission review", extra=extra)


def _endpoint(
    state: WebhookState, kind: Kind, path: str, decide: AnswerFn = job_review.answer
) -> Callable[[Request], Awaitable[Response]]:
    settings = state.settings
    metrics = state.metrics
    latency = metrics.latency.labels(webhook=path)
    limit = settings.max_body_bytes
    too_many = error_body(
        429,
        f"the webhook is answering {settings.max_concurrent_requests} requests already; "
        "retry shortly",
    )
    too_slow = error_body(
        408, f"the request body was not received within {settings.read_timeout:g} seconds"
    )

    async def handle(request: Request) -> Response:
        # Checked and taken with no await in between: the event loop runs one handler at a time.
        if state.in_flight >= settings.max_concurrent_requests:
            metrics.rejected.labels(reason="too_many").inc()
            metrics.count(path, 429, Result.ERROR.value)
            response = _closing(too_many)
            response.headers["retry-after"] = "1"
            return response
        state.in_flight += 1
        try:
            return await _handle(request)
        finally:
            state.in_flight -= 1

    async def _handle(request: Request) -> Response:
        started = time.perf_counter()
        if not _content_type_ok(request):
            answer = error_body(
                415,
                "the content type must be application/json, got "
                f"{request.headers.get('content-type', 'none')!r}",
            )
            response = _closing(answer)
        else:
            try:
                async with asyncio.timeout(settings.read_timeout):
                    body = await _read_body(request, limit)
            except TimeoutError:
                metrics.rejected.labels(reason="read_timeout").inc()
                log.warning(
                    "request body not received in time; connection closed",
                    extra={"webhook": kind.value, "client": _client(request)},
                )
                metrics.count(path, 408, Result.ERROR.value)
                return _closing(too_slow)
            except ClientDisconnect:
                # Nobody is left to answer: one line, no traceback.
                metrics.rejected.labels(reason="disconnected").inc()
                log.info(
                    "client disconnected before sending the whole body",
                    extra={"webhook": kind.value, "client": _client(request)},
                )
                return Response(status_code=400)
            if body is None:
                answer = error_body(413, f"the body is larger than {limit} bytes")
                response = _closing(answer)
            else:
                answer = decide(kind, body, settings, state.queue_lookup)
                del body
                response = _json_response(answer)
        try:
            metrics.count(path, answer.status, answer.result.value)
            latency.observe(time.perf_counter() - started)
            if answer.result is not Result.ALLOWED or log.isEnabledFor(logging.DEBUG):
                _log_answer(kind, answer)
        except Exception:  # bookkeeping must never turn an answer into a 5xx
            log.exception("admission bookkeeping failed", extra={"webhook": kind.value})
        return response

    return handle


Handler = Callable[[Request], Awaitable[Response]]


class _AdmissionApp(FastAPI):
    """A FastAPI app that hands a POST to an admission path straight to its handler.

    The handlers read the raw body, answer every error themselves and never raise, so the
    framework's middleware stack and router (a dozen awaits per request) add nothing but cost
    there; everything else (other paths, other methods: 404, 405) goes through FastAPI.
    """

    admission: dict[str, Handler]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            handler = self.admission.get(scope["path"])
            if handler is not None:
                response = await handler(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _wrong_place(paths: list[str]) -> Callable[[Request, Exception], Awaitable[Response]]:
    """The answer to a request no admission endpoint takes: a JSON error (as for every other
    refusal) that names the paths the webhook serves, instead of FastAPI's bare
    `{"detail": "Not Found"}`; a GET on an admission path (405) says that it takes POST."""
    served = ", ".join(paths)

    async def answer(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, StarletteHTTPException) else 404
        path = request.url.path
        if status == 405:
            message = (
                f"{request.method} is not allowed at {path}: an admission webhook takes an "
                "AdmissionReview by POST"
            )
        else:
            message = (
                f"no admission webhook at {path}; this webhook serves POST at: {served} "
                "(health and metrics are on their own ports: /healthz, /readyz, /metrics)"
            )
        headers = exc.headers if isinstance(exc, StarletteHTTPException) else None
        body = {"error": message, "code": status, "paths": paths}
        return JSONResponse(body, status_code=status, headers=headers)

    return answer


def _objects_decider(state: WebhookState, answer_fn: objectreview.ObjectAnswerFn) -> AnswerFn:
    def decide(kind: Kind, body: bytes, settings: Settings, queues: QueueLookup) -> Answer:
        return objectreview.guarded(answer_fn, kind, body, settings, queues, state.cluster)

    return decide


def create_app(
    settings: Settings,
    queue_cache: QueueCacheLike | None,
    cluster: ClusterLookups | None = None,
) -> FastAPI:
    """The admission app. Its `state.webhook` (a WebhookState) feeds the health and metrics
    apps made by `create_health_app` and `create_metrics_app`."""
    podtemplate.warm_up()
    state = WebhookState(settings, queue_cache, cluster)
    app = _AdmissionApp(
        title="vcjob admission webhook",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.webhook = state
    handlers: dict[str, Handler] = {
        labels.MUTATE_PATH: _endpoint(state, Kind.MUTATE, labels.MUTATE_PATH),
        labels.VALIDATE_PATH: _endpoint(state, Kind.VALIDATE, labels.VALIDATE_PATH),
        cronjob_review.MUTATE_PATH: _endpoint(
            state, Kind.MUTATE, cronjob_review.MUTATE_PATH, cronjob_review.answer
        ),
        cronjob_review.VALIDATE_PATH: _endpoint(
            state, Kind.VALIDATE, cronjob_review.VALIDATE_PATH, cronjob_review.answer
        ),
        jobflow_review.VALIDATE_JOBFLOW_PATH: _endpoint(
            state,
            Kind.VALIDATE,
            jobflow_review.VALIDATE_JOBFLOW_PATH,
            jobflow_review.answer_jobflow,
        ),
        jobflow_review.VALIDATE_JOBTEMPLATE_PATH: _endpoint(
            state,
            Kind.VALIDATE,
            jobflow_review.VALIDATE_JOBTEMPLATE_PATH,
            jobflow_review.answer_jobtemplate,
        ),
    }
    for path, (kind, answer_fn) in OBJECT_ROUTES.items():
        handlers[path] = _endpoint(state, kind, path, _objects_decider(state, answer_fn))
    app.admission = handlers
    # Also plain routes, so other methods on these paths get a 405.
    for path, handler in handlers.items():
        app.add_route(path, handler, methods=["POST"], include_in_schema=False)
    wrong_place = _wrong_place(list(handlers))
    app.add_exception_handler(404, wrong_place)
    app.add_exception_handler(405, wrong_place)
    return app


def webhook_state(app: FastAPI) -> WebhookState:
    state: WebhookState = app.state.webhook
    return state


def create_health_app(state: WebhookState) -> FastAPI:
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> Response:
        ready, reason = state.readiness()
        return JSONResponse(
            {"status": "ok" if ready else "not ready", "reason": reason},
            status_code=200 if ready else 503,
        )

    return app


def create_metrics_app(state: WebhookState) -> Callable[..., Awaitable[None]]:
    metrics_app: Callable[..., Awaitable[None]] = make_asgi_app(state.metrics.registry)
    return metrics_app
