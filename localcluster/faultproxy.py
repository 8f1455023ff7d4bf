"""A loopback HTTPS proxy in front of kube-apiserver that injects API faults at a seeded rate.

    proxy = FaultProxy("https://127.0.0.1:6443", ca, cert, key, rate=0.05, seed=7)
    port = proxy.start()        # serves on its own thread and event loop
    ...
    proxy.stop()

or as a process: `python -m localcluster.faultproxy --upstream URL --upstream-ca F --cert F
--key F --port N --fault-rate R --fault-seed S [--timeout-hold SECONDS] [--port-file F]`.

Every request is forwarded as it came (method, target, headers but the hop-by-hop ones, body)
over HTTP/1.1 with TLS verified against the cluster CA; clients authenticate upstream with their
own bearer tokens, the proxy presents no client certificate. Each client connection is paired
with one upstream connection, opened on its first request and kept alive with it. Responses
stream back chunk by chunk, so watches and followed logs arrive as they happen. Requests with
`Connection: Upgrade` (exec, attach, port-forward) become raw byte tunnels and are never faulted.
What fails, and how, is decided in `localcluster.faults`; each injected fault is logged at INFO
with `kind`, `method` and `path`.

It stays one module of about 800 lines: most of it is `ClientSession`, one state machine over one
client connection and its upstream (h11 on both sides, the fault chosen per request changing
what is read, forwarded and answered), whose steps share that state; the pure parts (which fault
and how, in `faults`; the header rules, in `proxyheaders`) are apart already.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import ipaddress
import logging
import signal
import ssl
import tempfile
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar
from urllib.parse import urlsplit

import click
import h11

from localcluster import faults
from localcluster.faults import FaultAnswer, FaultKind, FaultPicker, WatchCut, WatchFraming
from localcluster.proxyheaders import (
    Headers,
    downstream_response_headers,
    header,
    request_has_body,
    upstream_request_headers,
)
from shared.logging import LOG_FORMAT_CHOICES, announce, configure_logging

log = logging.getLogger(__name__)

READ_CHUNK: Final = 64 * 1024
MAX_HEADER_BYTES: Final = 1024 * 1024
# A client keep-alive connection idle this long is closed (Go clients drop theirs after 90 s).
IDLE_TIMEOUT: Final = 120.0
CONNECT_TIMEOUT: Final = 10.0
# How long a timed-out request is held before its 504. Short of kube-apiserver's 60 s so that
# clients without a deadline of their own are not stalled for long; vcjob's processes set a
# shorter deadline and see their own timeout first.
DEFAULT_TIMEOUT_HOLD: Final = 10.0
# A timed-out write that still goes through gets this long to finish upstream.
DETACHED_DEADLINE: Final = 60.0
# Bytes a client may send ahead (pipelining) while its previous response streams.
MAX_READ_AHEAD: Final = 1024 * 1024
START_TIMEOUT: Final = 10.0
STOP_TIMEOUT: Final = 10.0

T = TypeVar("T")


# -- configuration ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProxyConfig:
    upstream: str  # https://127.0.0.1:PORT
    upstream_ca: Path
    cert: Path
    key: Path
    rate: float = 0.0
    seed: int | None = None
    port: int = 0
    host: str = "127.0.0.1"
    timeout_hold: float = DEFAULT_TIMEOUT_HOLD


@dataclass(frozen=True)
class UpstreamTarget:
    host: str
    port: int
    authority: bytes  # the Host header kube-apiserver gets

    @classmethod
    def from_url(cls, url: str) -> UpstreamTarget:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"upstream must be an https:// URL with a host, got {url!r}")
        if parts.path not in ("", "/"):
            raise ValueError(f"upstream must not have a path, got {url!r}")
        return cls(parts.hostname, parts.port or 443, parts.netloc.encode())


def server_tls(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    # Only HTTP/1.1 is offered, so kubectl and the Python client do not try HTTP/2.
    context.set_alpn_protocols(["http/1.1"])
    return context


def upstream_tls(ca: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(["http/1.1"])
    return context


# -- the upstream side ------------------------------------------------------------------------


class UpstreamError(Exception):
    """kube-apiserver could not be reached or broke off before answering."""


class UpstreamConnection:
    """One HTTP/1.1 client connection to kube-apiserver."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.http = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)

    async def send(self, event: h11.Event) -> None:
        data = self.http.send(event)
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def next_event(self) -> h11.Event:
        while True:
            event = self.http.next_event()
            if isinstance(event, h11.Event):
                return event
            if event is h11.PAUSED:  # only after a protocol switch, which is tunnelled instead
                raise UpstreamError("kube-apiserver switched protocols unasked")
            self.http.receive_data(await self.reader.read(READ_CHUNK))

    def ready_for_next(self) -> bool:
        """After a complete exchange: whether this connection can carry another request."""
        if self.http.our_state is h11.DONE and self.http.their_state is h11.DONE:
            self.http.start_next_cycle()
            return not self.reader.at_eof()
        return False

    def abort(self) -> None:
        self.writer.transport.abort()


# -- one client connection --------------------------------------------------------------------


class Outcome(enum.Enum):
    DONE = "done"  # the response ended normally
    CUT = "cut"  # the response was ended early; the upstream connection must go
    BROKEN = "broken"  # the client connection must close


class ClientSession:
    """Serves one client connection: reads its requests with h11, forwards or fails each."""

    def __init__(
        self, server: ProxyServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.http = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        self.upstream: UpstreamConnection | None = None
        self._read_ahead = bytearray()  # client bytes read while a response was streaming
        self._client_eof = False

    async def run(self) -> None:
        try:
            while await self._serve_one():
                pass
        except h11.RemoteProtocolError as exc:
            await self._reject_malformed(exc)
        except (OSError, TimeoutError, h11.ProtocolError, UpstreamError) as exc:
            log.debug("client connection ended", extra={"error": str(exc)})
        finally:
            self._drop_upstream()
            self.writer.close()

    # reading the client

    async def _read(self) -> bytes:
        if self._read_ahead:
            data = bytes(self._read_ahead)
            self._read_ahead.clear()
            return data
        if self._client_eof:
            return b""
        return await self.reader.read(READ_CHUNK)

    async def _next_event(self) -> h11.Event:
        while True:
            event = self.http.next_event()
            if isinstance(event, h11.Event):
                return event
            if event is h11.PAUSED:  # requests after an upgrade are never read: it is tunnelled
                raise h11.RemoteProtocolError("request after a protocol switch")
            if self.http.they_are_waiting_for_100_continue:
                await self._send(h11.InformationalResponse(status_code=100, headers=[]))
            self.http.receive_data(await asyncio.wait_for(self._read(), IDLE_TIMEOUT))

    async def _until_client_closes(self) -> None:
        """Returns when the client closes its connection; what it sends meanwhile is kept."""
        while len(self._read_ahead) < MAX_READ_AHEAD:
            data = await self.reader.read(READ_CHUNK)
            if not data:
                self._client_eof = True
                return
            self._read_ahead += data
        await asyncio.Event().wait()  # a client that floods us is simply not read further

    async def _send(self, event: h11.Event) -> None:
        data = self.http.send(event)
        if data:
            self.writer.write(data)
            await self.writer.drain()

    # one exchange

    async def _serve_one(self) -> bool:
        """Serve the next request; False when the connection is to close."""
        event = await self._next_event()
        if isinstance(event, h11.ConnectionClosed):
            return False
        if not isinstance(event, h11.Request):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
        request = event
        body = bytearray()
        while True:
            part = await self._next_event()
            if isinstance(part, h11.Data):
                body += part.data
            elif isinstance(part, h11.EndOfMessage):
                break
            else:
                return False
        if not await self._handle(request, bytes(body)):
            return False
        if self.http.our_state is not h11.DONE or self.http.their_state is not h11.DONE:
            return False
        self.http.start_next_cycle()
        return True

    async def _handle(self, request: h11.Request, body: bytes) -> bool:
        """Answer one request; False when the connection is to close."""
        method = request.method.decode("ascii")
        target = request.target.decode("latin-1")
        api = faults.parse_request(method, target)
        raw_headers = list(request.headers.raw_items())
        upgrade = faults.is_upgrade(raw_headers)
        if upgrade:
            await self._tunnel(request, raw_headers)
            return False
        body_length = len(body) if request_has_body(raw_headers) else None
        outgoing = h11.Request(
            method=request.method,
            target=request.target,
            headers=upstream_request_headers(
                raw_headers, self.server.upstream.authority, body_length
            ),
        )
        fault = (
            self.server.picker.pick(api.method, api.is_watch)
            if faults.faultable(api, upgrade)
            else None
        )
        if fault is not None:
            _log_fault(fault, api)
        match fault:
            case faults.StatusFault(kind=kind):
                await self._answer(faults.fault_answer(kind, api.resource))
                return True
            case faults.TimeoutFault(applied=applied):
                if applied:
                    self.server.detach(self.server.forward_detached(outgoing, body))
                if not await self._hold(
                    faults.hold_seconds(api.timeout, self.server.config.timeout_hold)
                ):
                    return False
                await self._answer(faults.fault_answer(FaultKind.TIMEOUT, api.resource))
                return True
            case _:
                return await self._forward(outgoing, body, fault)

    async def _answer(self, answer: FaultAnswer) -> None:
        headers = [(name.encode(), value.encode()) for name, value in answer.headers]
        await self._send(
            h11.Response(
                status_code=answer.code, headers=headers, reason=answer.reason_phrase.encode()
            )
        )
        await self._send(h11.Data(data=answer.body))
        await self._send(h11.EndOfMessage())

    async def _hold(self, seconds: float) -> bool:
        """Wait `seconds`; False if the client went away first."""
        gone = asyncio.create_task(self._until_client_closes())
        try:
            done, _ = await asyncio.wait({gone}, timeout=seconds)
            return not done
        finally:
            await _finish(gone)

    async def _forward(self, request: h11.Request, body: bytes, cut: WatchCut | None) -> bool:
        try:
            upstream, response = await self._exchange(request, body)
        except UpstreamError as exc:
            log.warning(
                "kube-apiserver unreachable",
                extra={"upstream": self.server.config.upstream, "error": str(exc)},
            )
            message = f"kube-apiserver at {self.server.config.upstream} is unreachable: {exc}"
            await self._answer(
                faults.status_answer(faults.unavailable_status(message), faults.RETRY_AFTER_SECONDS)
            )
            return True
        raw_headers = list(response.headers.raw_items())
        await self._send(
            h11.Response(
                status_code=response.status_code,
                headers=downstream_response_headers(raw_headers),
                reason=response.reason,
            )
        )
        framing = None
        if cut is not None and response.status_code == 200:
            framing = WatchFraming.for_content_type(header(raw_headers, b"content-type"))
        relay = asyncio.create_task(self._relay_body(upstream, cut, framing))
        gone = asyncio.create_task(self._until_client_closes())
        try:
            await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await _finish(gone)
            if not relay.done():
                await _finish(relay)
        if relay.cancelled():
            # The client hung up mid-response (a watch it stopped, a log it stopped following).
            self._drop_upstream()
            return False
        outcome = relay.result()
        if outcome is not Outcome.DONE or not upstream.ready_for_next():
            self._drop_upstream()
        return outcome is not Outcome.BROKEN

    async def _exchange(
        self, request: h11.Request, body: bytes
    ) -> tuple[UpstreamConnection, h11.Response]:
        """Send the request on this client's upstream connection and read the response head.
        A kept-alive connection kube-apiserver closed meanwhile is replaced once."""
        while True:
            if self.upstream is not None and self.upstream.reader.at_eof():
                self._drop_upstream()  # kube-apiserver closed it while it was idle
            fresh = self.upstream is None
            if self.upstream is None:
                self.upstream = await self.server.connect_upstream()
            upstream = self.upstream
            try:
                await upstream.send(request)
                if body:
                    await upstream.send(h11.Data(data=body))
                await upstream.send(h11.EndOfMessage())
                while True:
                    event = await upstream.next_event()
                    if isinstance(event, h11.Response):
                        return upstream, event
                    if not isinstance(event, h11.InformationalResponse):
                        raise UpstreamError(f"connection ended before an answer ({event!r})")
            except (OSError, h11.ProtocolError, UpstreamError) as exc:
                self._drop_upstream()
                if fresh:
                    raise UpstreamError(str(exc) or type(exc).__name__) from exc

    async def _relay_body(
        self, upstream: UpstreamConnection, cut: WatchCut | None, framing: WatchFraming | None
    ) -> Outcome:
        delivered = 0
        while True:
            try:
                event = await upstream.next_event()
            except (OSError, h11.ProtocolError) as exc:
                log.debug("kube-apiserver broke off a response", extra={"error": str(exc)})
                return Outcome.BROKEN
            if isinstance(event, h11.EndOfMessage):
                await self._send(h11.EndOfMessage())
                return Outcome.DONE
            if not isinstance(event, h11.Data):
                return Outcome.BROKEN
            data = bytes(event.data)
            if cut is not None and framing is not None:
                for end in framing.feed(data):
                    delivered += 1
                    if delivered >= cut.after_events:
                        await self._send(h11.Data(data=data[:end]))
                        return await self._cut(cut)
            if data:
                await self._send(h11.Data(data=data))

    async def _cut(self, cut: WatchCut) -> Outcome:
        if cut.abrupt:
            return Outcome.BROKEN
        try:
            await self._send(h11.EndOfMessage())
        except h11.LocalProtocolError:
            return Outcome.BROKEN  # a body of announced length cannot end early
        return Outcome.CUT

    async def _tunnel(self, request: h11.Request, raw_headers: Headers) -> None:
        """Relay an upgrade (exec, attach, port-forward) as raw bytes both ways."""
        self._drop_upstream()
        try:
            reader, writer = await self.server.open_upstream()
        except (OSError, TimeoutError) as exc:
            message = f"kube-apiserver at {self.server.config.upstream} is unreachable: {exc}"
            await self._answer(faults.status_answer(faults.unavailable_status(message)))
            return
        head = h11.Connection(h11.CLIENT).send(
            h11.Request(
                method=request.method,
                target=request.target,
                headers=upstream_request_headers(
                    raw_headers, self.server.upstream.authority, None, upgrade=True
                ),
            )
        )
        trailing, _ = self.http.trailing_data
        writer.write((head or b"") + trailing + bytes(self._read_ahead))
        self._read_ahead.clear()
        pipes = {
            asyncio.create_task(_pipe(self.reader, writer)),
            asyncio.create_task(_pipe(reader, self.writer)),
        }
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pipe in pipes:
                await _finish(pipe)
            writer.transport.abort()

    def _drop_upstream(self) -> None:
        if self.upstream is not None:
            self.upstream.abort()
            self.upstream = None

    async def _reject_malformed(self, exc: h11.RemoteProtocolError) -> None:
        if self.http.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        payload = f"bad request: {exc}\n".encode()
        with contextlib.suppress(OSError, h11.ProtocolError):
            await self._send(
                h11.Response(
                    status_code=exc.error_status_hint,
                    headers=[
                        (b"Content-Type", b"text/plain; charset=utf-8"),
                        (b"Content-Length", str(len(payload)).encode()),
                        (b"Connection", b"close"),
                    ],
                )
            )
            await self._send(h11.Data(data=payload))
            await self._send(h11.EndOfMessage())


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(READ_CHUNK):
            writer.write(data)
            await writer.drain()


async def _finish(task: asyncio.Task[T]) -> None:
    """Cancel a helper task and wait for it, without losing our own cancellation."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: a helper's failure is the session's business, not asyncio's


def _log_fault(fault: faults.Fault, api: faults.ApiRequest) -> None:
    extra: dict[str, object] = {"kind": fault.kind.value, "method": api.method, "path": api.path}
    if isinstance(fault, WatchCut):
        extra.update(after_events=fault.after_events, abrupt=fault.abrupt)
    elif isinstance(fault, faults.TimeoutFault):
        extra["applied"] = fault.applied
    log.info("fault injected", extra=extra)


# -- the server -------------------------------------------------------------------------------


class ProxyServer:
    """The proxy on the running event loop: `await start()` binds, `await stop()` ends it."""

    def __init__(self, config: ProxyConfig) -> None:
        if not ipaddress.ip_address(config.host).is_loopback:
            raise ValueError(f"the fault proxy serves on loopback only, not {config.host}")
        self.config = config
        self.upstream = UpstreamTarget.from_url(config.upstream)
        self.picker = FaultPicker(config.rate, config.seed)
        self._server_tls = server_tls(config.cert, config.key)
        self._upstream_tls = upstream_tls(config.upstream_ca)
        self._server: asyncio.Server | None = None
        self._sessions: set[asyncio.Task[None]] = set()
        self._detached: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> int:
        self._server = await asyncio.start_server(
            self._on_client, self.config.host, self.config.port, ssl=self._server_tls
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.info(
            "fault proxy serving",
            extra={
                "address": f"{self.config.host}:{self.port}",
                "upstream": self.config.upstream,
                "fault_rate": self.config.rate,
                "fault_seed": self.config.seed,
            },
        )
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = self._sessions | self._detached
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_TIMEOUT)

    async def open_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.wait_for(
            asyncio.open_connection(
                self.upstream.host,
                self.upstream.port,
                ssl=self._upstream_tls,
                server_hostname=self.upstream.host,
            ),
            CONNECT_TIMEOUT,
        )

    async def connect_upstream(self) -> UpstreamConnection:
        try:
            reader, writer = await self.open_upstream()
        except (OSError, TimeoutError) as exc:
            raise UpstreamError(str(exc) or type(exc).__name__) from exc
        return UpstreamConnection(reader, writer)

    def detach(self, work: Coroutine[object, object, None]) -> None:
        task = asyncio.create_task(work)
        self._detached.add(task)
        task.add_done_callback(self._detached.discard)

    async def forward_detached(self, request: h11.Request, body: bytes) -> None:
        """Send a request whose client was already answered; its answer goes nowhere."""
        try:
            upstream = await self.connect_upstream()
        except UpstreamError:
            return
        try:
            async with asyncio.timeout(DETACHED_DEADLINE):
                await upstream.send(request)
                if body:
                    await upstream.send(h11.Data(data=body))
                await upstream.send(h11.EndOfMessage())
                while not isinstance(
                    await upstream.next_event(), (h11.EndOfMessage, h11.ConnectionClosed)
                ):
                    pass
        except (OSError, TimeoutError, h11.ProtocolError) as exc:
            log.debug("timed-out request failed upstream", extra={"error": str(exc)})
        finally:
            upstream.abort()

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._sessions.add(task)
        try:
            await ClientSession(self, reader, writer).run()
        except asyncio.CancelledError:
            pass  # stop(): the connection is closed; this is the task's outermost frame
        except Exception:
            log.exception("fault proxy session failed")
        finally:
            if task is not None:
                self._sessions.discard(task)


class FaultProxy:
    """The proxy on a thread of its own, for callers that are not asyncio programs."""

    def __init__(
        self,
        upstream: str,
        upstream_ca: Path,
        cert: Path,
        key: Path,
        rate: float = 0.0,
        seed: int | None = None,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        timeout_hold: float = DEFAULT_TIMEOUT_HOLD,
    ) -> None:
        self.config = ProxyConfig(
            upstream, upstream_ca, cert, key, rate, seed, port, host, timeout_hold
        )
        self._server = ProxyServer(self.config)  # fails here on a bad URL, rate or file
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def url(self) -> str:
        return f"https://{self.config.host}:{self.port}"

    def start(self) -> int:
        """Bind and serve; returns the bound port."""
        if self._loop is not None:
            raise RuntimeError("the fault proxy is already started")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fault-proxy", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            return asyncio.run_coroutine_threadsafe(self._server.start(), loop).result(
                START_TIMEOUT
            )
        except BaseException:
            self._shutdown()
            raise

    def stop(self) -> None:
        """Stop serving and close every connection; idempotent."""
        if self._loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._server.stop(), self._loop).result(
                STOP_TIMEOUT + 5
            )
        except Exception:
            log.warning("fault proxy did not stop cleanly", exc_info=True)
        self._shutdown()

    def _shutdown(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(STOP_TIMEOUT)
        if not loop.is_running():
            loop.close()

    def __enter__(self) -> FaultProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the process ------------------------------------------------------------------------------


def _write_port_file(path: Path, port: int) -> None:
    # Written whole, then renamed: a reader never sees a half-written port.
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as out:
        out.write(f"{port}\n")
    Path(out.name).replace(path)


async def _serve(config: ProxyConfig, port_file: Path | None) -> None:
    server = ProxyServer(config)
    port = await server.start()
    if port_file is not None:
        _write_port_file(port_file, port)
    announce(log, "fault proxy listening", port=port)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    await server.stop()


@click.command()
@click.option("--upstream", required=True, help="kube-apiserver's URL, https://127.0.0.1:PORT.")
@click.option(
    "--upstream-ca",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="CA bundle that kube-apiserver's serving certificate is verified with.",
)
@click.option(
    "--cert",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The proxy's serving certificate (PEM).",
)
@click.option(
    "--key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Its private key (PEM).",
)
@click.option("--port", type=int, default=0, show_default=True, help="Port on 127.0.0.1; 0 = free.")
@click.option(
    "--fault-rate",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Share of API requests that fail; 0 forwards everything unchanged.",
)
@click.option("--fault-seed", type=int, default=None, help="Seed for reproducible faults.")
@click.option(
    "--timeout-hold",
    type=click.FloatRange(min=0.0),
    default=DEFAULT_TIMEOUT_HOLD,
    show_default=True,
    help="Seconds a timed-out request is held before its 504.",
)
@click.option(
    "--port-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the bound port here once listening.",
)
@click.option(
    "--log-format", type=click.Choice(LOG_FORMAT_CHOICES), default="auto", show_default=True
)
def main(
    upstream: str,
    upstream_ca: Path,
    cert: Path,
    key: Path,
    port: int,
    fault_rate: float,
    fault_seed: int | None,
    timeout_hold: float,
    port_file: Path | None,
    log_format: str,
) -> None:
    """Serve HTTPS on 127.0.0.1, forwarding to kube-apiserver and failing a share of requests."""
    configure_logging(fmt=log_format)
    try:
        UpstreamTarget.from_url(upstream)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--upstream") from exc
    config = ProxyConfig(
        upstream, upstream_ca, cert, key, fault_rate, fault_seed, port, "127.0.0.1", timeout_hold
    )
    asyncio.run(_serve(config, port_file))


if __name__ == "__main__":
    main()
