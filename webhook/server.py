"""Runs the webhook process: the TLS admission server, the health and metrics servers, the
certificate reloader, and graceful shutdown (readiness drops on SIGTERM, serving continues for a
few seconds so the endpoints drop the Pod, then the servers stop)."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import ctypes
import gc
import logging
import signal
from collections.abc import Generator
from typing import Any, Final, Literal

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from webhook.app import (
    QueueCacheLike,
    create_app,
    create_health_app,
    create_metrics_app,
    webhook_state,
)
from webhook.clusterlookups import ClusterLookups
from webhook.settings import Settings
from webhook.tls import CertReloader

log = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN_SECONDS = 10
# glibc's M_MMAP_THRESHOLD, and the size from which buffers get their own mapping.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 128 * 1024
# The most decrypted bytes a TLS connection reads at once (asyncio's own figure is 256 KiB).
TLS_READ_BYTES: Final = 64 * 1024
# How long an idle kept-alive connection stays open. The API server's webhook client drops idle
# connections after 90 s (Go's transport defaults, as client-go sets them); the server must
# outlast that. With uvicorn's own 5 s, a request sent on a connection the server was closing at
# that instant failed with EOF, and the API server does not resend a POST: the user's create
# failed with "failed calling webhook ... EOF".
IDLE_KEEP_ALIVE_SECONDS: Final = 120
API_SERVER_IDLE_CONNECTION_SECONDS: Final = 90


def return_freed_memory() -> bool:
    """Have glibc give large freed buffers back to the system at once.

    glibc raises its mmap threshold each time a mapped block is freed, so after one burst of
    ~3 MiB request bodies later bodies land on the heap, and the heap, fragmented, never shrinks:
    the process kept ~70 MB it no longer used. A fixed threshold keeps every large body in its
    own mapping, unmapped when freed. False where the C library is not glibc.
    """
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def bound_tls_reads(size: int = TLS_READ_BYTES) -> bool:
    """Have asyncio's TLS connections read at most `size` bytes at a time.

    asyncio asks the TLS object for up to 256 KiB on every read, as a fresh bytes object of
    that size (twice per request: the read that finds the data and the one that finds none),
    and keeps a receive buffer of that size per connection. Above the fixed mmap threshold
    (`return_freed_memory`) each such read is an mmap, a page fault and an munmap: ~25 us of
    system time per request under load. Below it they come from the heap. False where asyncio
    has no such setting (then nothing is changed).
    """
    protocol = asyncio.sslproto.SSLProtocol
    if not isinstance(getattr(protocol, "max_size", None), int):
        return False
    protocol.max_size = size
    return True


HeadCheck = float | Literal["idle", "overdue"]


def head_check(started: float | None, now: float, seconds: float) -> HeadCheck:
    """What a connection's head timer does when it fires at `now`: "idle" when no request head
    is awaited (`started` None: the timer is dropped), "overdue" when the awaited head began
    `seconds` ago or more (the connection is closed), otherwise the time to look again.

    The head's start is only written down per request; the timer, armed once and moved on when
    it fires early, replaces a timer set and cancelled on every request.
    """
    if started is None:
        return "idle"
    deadline = started + seconds
    return "overdue" if now >= deadline else deadline


def head_deadline_protocol(seconds: float) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with a deadline on each request head.

    The body has its own deadline in the app; this one covers what comes before it: a client
    that connects, or starts a new request on a kept-alive connection, and then dribbles or
    withholds its headers is disconnected `seconds` after it began.
    """

    collection: list[asyncio.TimerHandle] = []

    def collect_soon(loop: asyncio.AbstractEventLoop) -> None:
        """One cyclic collection a second after connections close (at most one pending).

        A closed TLS connection is a reference cycle (asyncio's SSL protocol and transport)
        holding a 256 KiB read buffer, so only the cyclic collector frees it. The request path
        allocates so little that the collector's oldest generation runs rarely: under a load
        that reconnects often, dead connections piled up by tens of MB before it did. With the
        start-up objects frozen (see `serve`) a full collection takes microseconds.
        """

        def collect() -> None:
            collection.clear()
            gc.collect()

        if not collection:
            collection.append(loop.call_later(1.0, collect))

    class HeadDeadline(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None
        # When the awaited request head began; None while none is awaited (a request is being
        # handled, or the connection is idle after an answer).
        _head_started: float | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._awaiting_head():
                self._arm()
            super().data_received(data)
            if not self._awaiting_head():
                self._head_started = None

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_started = None
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)
            collect_soon(self.loop)

        def _awaiting_head(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            if self._head_started is None:
                self._head_started = self.loop.time()
            if self._head_timer is None:
                self._head_timer = self.loop.call_at(self._head_started + seconds, self._fired)

        def _fired(self) -> None:
            self._head_timer = None
            check = head_check(self._head_started, self.loop.time(), seconds)
            if isinstance(check, float):
                self._head_timer = self.loop.call_at(check, self._fired)
                return
            if check == "idle":
                return
            self._head_started = None
            if not self.transport.is_closing():
                client = f"{self.client[0]}:{self.client[1]}" if self.client else "unknown"
                log.info(
                    "request head not received in time; connection closed",
                    extra={"client": client, "seconds": seconds},
                )
                self.transport.close()

    return HeadDeadline


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signal handling to `serve` (one handler for all three)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _config(app: Any, host: str, port: int, **extra: Any) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        # Bounds the request head a client may dribble in (uvicorn's default, stated).
        h11_max_incomplete_event_size=16 * 1024,
        **extra,
    )


def _bound_port(server: uvicorn.Server) -> int | None:
    for listener in getattr(server, "servers", []):
        for sock in listener.sockets:
            port: int = sock.getsockname()[1]
            return port
    return None


async def serve(
    settings: Settings,
    queue_cache: QueueCacheLike | None,
    cluster: ClusterLookups | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT; returns once every server has stopped."""
    if settings.tls_cert_file is None or settings.tls_private_key_file is None:
        raise ValueError("the webhook needs --tls-cert-file and --tls-private-key-file")
    return_freed_memory()
    bound_tls_reads()
    app = create_app(settings, queue_cache, cluster)
    state = webhook_state(app)
    # Everything loaded so far (schemas, modules) lives as long as the process: keep it out of
    # the garbage collector's generations so collections under load stay short.
    gc.collect()
    gc.freeze()
    reloader = CertReloader(settings.tls_cert_file, settings.tls_private_key_file)
    servers = {
        "webhook": _Server(
            _config(
                app,
                settings.host,
                settings.port,
                ssl_certfile=str(settings.tls_cert_file),
                ssl_keyfile=str(settings.tls_private_key_file),
                ssl_context_factory=reloader.context_factory,
                http=head_deadline_protocol(settings.read_timeout),
                timeout_keep_alive=IDLE_KEEP_ALIVE_SECONDS,
            )
        ),
        "health": _Server(_config(create_health_app(state), settings.host, settings.health_port)),
        "metrics": _Server(
            _config(create_metrics_app(state), settings.host, settings.metrics_port)
        ),
    }
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def stop_servers() -> None:
        for server in servers.values():
            server.should_exit = True
        stop.set()

    def on_signal(signum: int) -> None:
        if state.shutting_down.is_set():
            log.info("second signal; stopping now", extra={"signal": signum})
            stop_servers()
            return
        log.info(
            "shutting down: not ready, still serving",
            extra={"signal": signum, "delay_seconds": settings.shutdown_delay},
        )
        state.shutting_down.set()
        loop.call_later(settings.shutdown_delay, stop_servers)

    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, on_signal, signum)

    async def announce() -> None:
        while not all(s.started for s in servers.values()):
            if any(t.done() for t in serving):
                return
            await asyncio.sleep(0.02)
        state.serving.set()
        log.info(
            "webhook serving",
            extra={name: _bound_port(server) for name, server in servers.items()},
        )

    certificate: list[bool] = []

    async def serve_tls() -> None:
        """The admission server, once its certificate files load (an empty Secret is waited
        for, with health served meanwhile and /readyz false, instead of a failed start)."""
        if await reloader.loadable(max(settings.cert_reload_interval, 0.1), stop):
            certificate.append(True)
            await servers["webhook"].serve()

    serving = [
        asyncio.create_task(serve_tls() if name == "webhook" else s.serve(), name=name)
        for name, s in servers.items()
    ]
    helpers = [
        asyncio.create_task(announce()),
        asyncio.create_task(reloader.run(settings.cert_reload_interval, stop)),
    ]
    try:
        done, _ = await asyncio.wait(serving, return_when=asyncio.FIRST_COMPLETED)
        # One server ending (startup failure or shutdown) ends them all.
        stop_servers()
        await asyncio.gather(*serving, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        expected = [s for name, s in servers.items() if name != "webhook" or certificate]
        if any(s.started is False for s in expected):
            raise RuntimeError("a webhook listener failed to start (is the port in use?)")
    finally:
        stop.set()
        for helper in helpers:
            helper.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signum)
        log.info("webhook stopped")
