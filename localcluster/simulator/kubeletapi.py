"""The node agent's kubelet API: what kube-apiserver calls at `https://NODE-IP:KUBELET-PORT` for
`kubectl logs`, `exec`, `attach` and `port-forward` (kubelet's pkg/kubelet/server paths):

- `GET /containerLogs/NAMESPACE/POD/CONTAINER` (PodLogOptions in the query), a streamed
  text/plain body;
- `GET|POST /exec/NAMESPACE/POD[/UID]/CONTAINER?command=…&input=1&output=1&error=1&tty=0`,
  `/attach/…` and `/portForward/NAMESPACE/POD[/UID]`, upgraded to SPDY/3.1 (kube-apiserver
  translates kubectl's WebSocket streams into SPDY towards kubelet);
- `GET /healthz`.

Only pods that really run on this node have logs, processes and ports; a simulated pod gets an
answer saying so, which kube-apiserver passes on to the user. One asyncio loop on a thread of its
own serves every connection over TLS, with a self-signed certificate made for the node's address
(kube-apiserver does not verify it without `--kubelet-certificate-authority`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import shutil
import ssl
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import h11

from localcluster.simulator import containerlogs, kubeletstreams, portforward, remotecommand
from localcluster.simulator.containerlogs import LogOptions, LogRequestError
from localcluster.simulator.kubeletpods import PodDirectory, PodEntry, simulated_message
from localcluster.simulator.kubeletroutes import (
    Answer,
    RefusalError,
    Request,
    Route,
    RouteError,
    route,
    stream_target,
)
from localcluster.simulator.remotecommand import StreamOptions, UpgradeRefusedError
from localcluster.simulator.spdy import Headers
from localcluster.simulator.spdyconn import SpdyConnection, StreamCheck, accept_any
from shared import certgen

log = logging.getLogger(__name__)

DEFAULT_PORT = 10250
IDLE_TIMEOUT = 300.0
READ_CHUNK = 64 * 1024
FOLLOW_POLL = 0.2
START_TIMEOUT = 10.0
# How long an exec or attach waits for a container whose process is still being set up.
START_GRACE = 5.0


# -- the server ------------------------------------------------------------------------------


class KubeletServer:
    """The kubelet API of one node, on `address:port` (0: any free port) over TLS; its certificate
    and key (and the CA that signed them) are written to `workdir`."""

    def __init__(self, pods: PodDirectory, address: str, port: int, workdir: Path) -> None:
        self.pods = pods
        self.address = address
        self.port = port
        self.workdir = workdir
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._nsenter = shutil.which("nsenter") or "nsenter"

    @property
    def ca_file(self) -> Path:
        return self.workdir / certgen.CA_FILE

    def _tls(self) -> ssl.SSLContext:
        certgen.write_bundle(certgen.issue([self.address]), self.workdir)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.workdir / certgen.CERT_FILE, self.workdir / certgen.KEY_FILE)
        context.set_alpn_protocols(["http/1.1"])
        return context

    def start(self) -> int:
        """Listen, and serve on a thread of its own; returns the port."""
        context = self._tls()
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=loop.run_forever, name=f"kubelet-api-{self.address}", daemon=True
        )
        self._thread.start()
        started: Future[asyncio.Server] = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(
                self._accept, self.address, self.port, ssl=context, ssl_handshake_timeout=10
            ),
            loop,
        )
        try:
            self._server = started.result(START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.info("kubelet api serving", extra={"address": self.address, "port": self.port})
        return self.port

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        if loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(START_TIMEOUT)
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(START_TIMEOUT)
        loop.close()
        self._loop = None

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await HttpConnection(self, reader, writer).serve()
        except asyncio.CancelledError:
            pass  # the server is stopping: the connection just ends
        except (ConnectionError, OSError, ssl.SSLError, h11.ProtocolError) as err:
            log.debug("kubelet api connection ended", extra={"error": str(err)})
        except Exception:
            log.exception("kubelet api connection crashed")
        finally:
            if task is not None:
                self._connections.discard(task)
            with contextlib.suppress(Exception):
                writer.close()


class HttpConnection:
    """One client connection: HTTP/1.1 requests one after another, until one upgrades it."""

    def __init__(
        self, server: KubeletServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.http = h11.Connection(h11.SERVER)

    async def _event(self, idle: float | None = None) -> Any:
        while True:
            event = self.http.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await asyncio.wait_for(self.reader.read(READ_CHUNK), idle)
            self.http.receive_data(data)

    async def _send(self, *events: Any) -> None:
        for event in events:
            data = self.http.send(event)
            if data:
                self.writer.write(data)
        await self.writer.drain()

    async def answer(self, answer: Answer, close: bool = False) -> None:
        headers = [
            (b"content-type", answer.content_type.encode()),
            (b"content-length", str(len(answer.body)).encode()),
            (b"x-content-type-options", b"nosniff"),
        ]
        if close:
            headers.append((b"connection", b"close"))
        await self._send(
            h11.Response(status_code=answer.status, headers=headers),
            h11.Data(data=answer.body),
            h11.EndOfMessage(),
        )

    async def serve(self) -> None:
        while True:
            try:
                event = await self._event(IDLE_TIMEOUT)
            except TimeoutError:
                return
            except h11.RemoteProtocolError as err:
                if self.http.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    await self.answer(Answer.text(400, f"bad request: {err}"), close=True)
                return
            if not isinstance(event, h11.Request):
                return
            request = Request.from_h11(event)
            if not await self._skip_body():
                return
            upgraded = await self.dispatch(request)
            if upgraded or self.http.our_state is not h11.DONE:
                return
            if self.http.their_state is not h11.DONE:
                return
            self.http.start_next_cycle()

    async def _skip_body(self) -> bool:
        """Read past the request's body (no handler takes one); False if the client left."""
        while True:
            event = await self._event(IDLE_TIMEOUT)
            if isinstance(event, h11.EndOfMessage):
                return True
            if isinstance(event, h11.ConnectionClosed):
                return False

    async def dispatch(self, request: Request) -> bool:
        """Answer one request; True when the connection was upgraded (and is now used up)."""
        try:
            target = route(request.method, request.path)
        except RouteError as err:
            await self.answer(Answer.text(err.status, err.message))
            return False
        if target.kind == "healthz":
            await self.answer(Answer.text(200, "ok"))
            return False
        if target.kind == "logs":
            await self.container_logs(target, request)
            return False
        try:
            return await self.stream(target, request)
        except RefusalError as refusal:
            await self.answer(refusal.answer)
            return False

    # -- logs ------------------------------------------------------------------------------

    async def container_logs(self, target: Route, request: Request) -> None:
        try:
            options = containerlogs.parse_log_options(request.query)
            entry, path, run = self._log_source(target, options)
            data, written = await asyncio.to_thread(_read_log, path)
        except LogRequestError as err:
            await self.answer(Answer.text(err.status, err.message))
            return
        now = dt.datetime.now(dt.UTC)
        budget = containerlogs.ByteBudget(options.limit_bytes)
        first = budget.take(containerlogs.existing_output(data, written, options, now))
        follow = options.follow and not options.previous and not budget.spent
        headers = [(b"content-type", b"text/plain"), (b"cache-control", b"no-cache, private")]
        if follow:
            headers.append((b"connection", b"close"))  # the end of the body is the end of the run
        await self._send(h11.Response(status_code=200, headers=headers))
        if first:
            await self._send(h11.Data(data=first))
        if follow:
            await self._follow(target, entry, path, run, len(data), options, budget)
        await self._send(h11.EndOfMessage())

    def _log_source(self, target: Route, options: LogOptions) -> tuple[PodEntry, Path, int]:
        entry = self.server.pods.find_pod(target.namespace, target.pod)
        if entry is None:
            raise LogRequestError(404, f'pod "{target.pod}" does not exist')
        container = entry.container(target.container)
        if container is None:
            raise LogRequestError(
                404, f'container "{target.container}" not found in pod "{target.pod}"'
            )
        if not entry.runs_for_real:
            raise LogRequestError(400, simulated_message(entry, "logs"))
        run = containerlogs.run_to_read(container.restart_count, options.previous)
        path = entry.log_file(target.container, run) if run is not None else None
        if path is None or run is None or not path.is_file():
            if options.previous:
                message = containerlogs.previous_not_found(target.container, target.pod)
            else:
                message = containerlogs.waiting_to_start(target.container, target.pod)
            raise LogRequestError(400, message)
        return entry, path, run

    def _run_goes_on(self, target: Route, entry: PodEntry, run: int) -> bool:
        now = self.server.pods.find_pod(target.namespace, target.pod)
        container = now.container(target.container) if now is not None else None
        return (
            now is not None
            and now.uid == entry.uid
            and container is not None
            and container.restart_count == run
            and container.pid is not None
        )

    async def _follow(
        self,
        target: Route,
        entry: PodEntry,
        path: Path,
        run: int,
        offset: int,
        options: LogOptions,
        budget: containerlogs.ByteBudget,
    ) -> None:
        """Send what the run writes, line by line, until it ends or the client goes away."""
        gone = asyncio.ensure_future(self.reader.read(1))  # a client that follows sends nothing
        lines = containerlogs.LineBuffer()
        try:
            ending = False
            while not gone.done() and not budget.spent:
                chunk = await asyncio.to_thread(kubeletstreams.read_from, path, offset)
                offset += len(chunk)
                ready = lines.feed(chunk) if chunk else []
                if ending and not chunk:
                    ready += lines.flush()
                if ready:
                    at = dt.datetime.now(dt.UTC)
                    out = budget.take(containerlogs.render(ready, at, options))
                    await self._send(h11.Data(data=out))
                if chunk:
                    continue
                if ending:
                    return
                # Read once more after the run ended: its last words may have come meanwhile.
                ending = not self._run_goes_on(target, entry, run)
                if not ending:
                    await asyncio.wait({gone}, timeout=FOLLOW_POLL)
        finally:
            gone.cancel()

    # -- exec, attach, port-forward --------------------------------------------------------

    async def stream(self, target: Route, request: Request) -> bool:
        pods = self.server.pods
        if target.kind == "portforward":
            entry = pods.find_pod(target.namespace, target.pod)
            if entry is None:
                raise RefusalError(Answer.text(404, "pod does not exist"))
            if target.uid and target.uid != entry.uid:
                raise RefusalError(Answer.text(404, "pod not found"))
            if not entry.runs_for_real:
                message = simulated_message(entry, "ports to forward to")
                raise RefusalError(
                    Answer.status_json(remotecommand.failure(400, "BadRequest", message))
                )
            if entry.netns is None:
                raise RefusalError(
                    Answer.status_json(
                        remotecommand.internal_error(
                            f"the sandbox of pod {entry.namespace}/{entry.name} is not running"
                        )
                    )
                )
            protocol = self._handshake(request, remotecommand.PORT_FORWARD_PROTOCOLS)
            connection = await self._upgrade(protocol, _forward_stream_check)
            session = portforward.PortForwardSession(
                connection, entry.netns, f"{entry.namespace}/{entry.name}", entry.uid
            )
            await session.run()
            return True
        try:
            options = remotecommand.stream_options(request.query)
        except ValueError as err:
            raise RefusalError(Answer.text(400, str(err))) from None
        command = request.query.get("command", [])
        if target.kind == "exec" and not command:
            raise RefusalError(
                Answer.text(400, "you must specify at least one command for the container")
            )
        entry, pid = await self._stream_target(target, options)
        protocol = self._handshake(request, remotecommand.REMOTE_COMMAND_PROTOCOLS)
        container = entry.container(target.container)
        run = container.restart_count if container is not None else 0
        log_file = entry.log_file(target.container, run) or Path("/nonexistent")
        # Attach shows what the container writes from the moment it was asked.
        offset = await asyncio.to_thread(kubeletstreams.file_size, log_file)
        connection = await self._upgrade(protocol)
        if target.kind == "exec":
            log.info(
                "exec",
                extra={"pod": f"{entry.namespace}/{entry.name}", "container": target.container},
            )
            await kubeletstreams.run_exec(
                connection, protocol, options, pid, command, self.server._nsenter
            )
            return True
        await kubeletstreams.run_attach(
            connection,
            protocol,
            options,
            log_file,
            offset,
            lambda: self._run_goes_on(target, entry, run),
        )
        return True

    async def _stream_target(self, target: Route, options: StreamOptions) -> tuple[PodEntry, int]:
        """As `stream_target`, giving a container that is being set up a moment to start."""
        deadline = asyncio.get_running_loop().time() + START_GRACE
        while True:
            entry = self.server.pods.find_pod(target.namespace, target.pod)
            container = entry.container(target.container) if entry is not None else None
            starting = container is not None and container.pid is not None and not container.started
            if not starting or asyncio.get_running_loop().time() > deadline:
                return stream_target(self.server.pods, target, options)
            await asyncio.sleep(FOLLOW_POLL / 4)

    def _handshake(self, request: Request, supported: Sequence[str]) -> str:
        try:
            remotecommand.check_upgrade(request.header("connection"), request.header("upgrade"))
            offered = remotecommand.client_protocols(
                request.headers.get(remotecommand.PROTOCOL_HEADER.lower(), [])
            )
            return remotecommand.negotiate(offered, supported)
        except UpgradeRefusedError as err:
            raise RefusalError(Answer.text(err.status, err.message)) from None

    async def _upgrade(self, protocol: str, check: StreamCheck = accept_any) -> SpdyConnection:
        response = h11.InformationalResponse(
            status_code=101,
            headers=[
                (b"connection", b"Upgrade"),
                (b"upgrade", remotecommand.SPDY_UPGRADE.encode()),
                (remotecommand.PROTOCOL_HEADER.encode(), protocol.encode()),
            ],
        )
        await self._send(response)
        initial, _ = self.http.trailing_data
        connection = SpdyConnection(self.reader, self.writer, bytes(initial), check)
        connection.start()
        return connection


def _forward_stream_check(stream_id: int, headers: Headers) -> str | None:
    try:
        remotecommand.forward_stream(headers, stream_id)
    except ValueError as err:
        return str(err)
    return None


def _read_log(path: Path) -> tuple[bytes, dt.datetime]:
    """The run's output so far and when it was last written to."""
    try:
        with path.open("rb") as handle:
            stat = path.stat()
            data = handle.read()
    except OSError as err:
        raise LogRequestError(400, f"failed to read log file: {err.strerror}") from err
    return data, dt.datetime.fromtimestamp(stat.st_mtime, dt.UTC)
