"""`pods/portforward` over a WebSocket carrying SPDY/3.1: per pair of streams, a TCP connection to
the pod IP and bytes copied both ways; failures are written on the pair's error stream."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from localcluster.apiserver import portforward, spdy

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CONNECT_TIMEOUT = 10.0
CHUNK = 32 * 1024


@dataclass
class _Pair:
    port: int
    error_stream: int = 0
    data_stream: int = 0
    inbound: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None


class Session:
    """One port-forward connection of one pod, from the accepted WebSocket to its close."""

    def __init__(self, address: str, pod: str, uid: str, receive: Receive, send: Send) -> None:
        self.address = address
        self.pod = pod
        self.uid = uid
        self._receive = receive
        self._send = send
        self._codec = spdy.HeaderCodec()
        self._reader = spdy.FrameReader()
        self._write_lock = asyncio.Lock()
        self._pairs: dict[str, _Pair] = {}
        self._data_streams: dict[int, _Pair] = {}
        self._last_stream = 0
        self._closed = False

    async def run(self) -> None:
        try:
            while True:
                message = await self._receive()
                if message["type"] == "websocket.disconnect":
                    return
                chunk = message.get("bytes") or (message.get("text") or "").encode()
                for frame in self._reader.feed(chunk):
                    if not await self._on_frame(frame):
                        return
        except spdy.ProtocolError as exc:
            log.warning("port-forward protocol error", extra={"pod": self.pod, "error": str(exc)})
            await self._write(spdy.goaway(self._last_stream, 1))
        finally:
            self._closed = True
            tasks = [p.task for p in self._pairs.values() if p.task is not None]
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _write(self, frame: bytes) -> None:
        if self._closed:
            return
        async with self._write_lock:
            with contextlib.suppress(Exception):
                await self._send({"type": "websocket.send", "bytes": frame})

    async def _on_frame(self, frame: spdy.Frame) -> bool:
        """Handle one frame; False when the peer has gone away."""
        if isinstance(frame, spdy.DataFrame):
            pair = self._data_streams.get(frame.stream_id)
            if pair is not None:
                if frame.data:
                    pair.inbound.put_nowait(frame.data)
                if frame.fin:
                    pair.inbound.put_nowait(None)
            return True
        if frame.kind == spdy.SYN_STREAM:
            await self._on_syn_stream(spdy.parse_syn_stream(frame))
        elif frame.kind == spdy.PING:
            await self._write(spdy.ping(spdy.parse_ping(frame)))
        elif frame.kind == spdy.RST_STREAM:
            pair = self._data_streams.get(spdy.parse_stream_id(frame))
            if pair is not None and pair.task is not None:
                pair.task.cancel()
        elif frame.kind == spdy.GOAWAY:
            return False
        # SETTINGS, WINDOW_UPDATE and HEADERS change nothing here: the copy is not flow-limited.
        return True

    async def _on_syn_stream(self, syn: spdy.SynStream) -> None:
        headers = self._codec.decode(syn.header_block)
        self._last_stream = max(self._last_stream, syn.stream_id)
        try:
            request = portforward.stream_request(headers, syn.stream_id)
        except ValueError as exc:
            log.warning("port-forward stream refused", extra={"error": str(exc)})
            await self._write(spdy.rst_stream(syn.stream_id, spdy.PROTOCOL_ERROR))
            return
        await self._write(spdy.syn_reply(syn.stream_id, self._codec.encode({})))
        pair = self._pairs.setdefault(request.request_id, _Pair(request.port))
        if request.kind == "error":
            pair.error_stream = syn.stream_id
        else:
            pair.data_stream = syn.stream_id
            self._data_streams[syn.stream_id] = pair
        if pair.error_stream and pair.data_stream and pair.task is None:
            pair.task = asyncio.create_task(self._forward(pair))

    async def _forward(self, pair: _Pair) -> None:
        opened: asyncio.StreamWriter | None = None
        try:
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.address, pair.port), CONNECT_TIMEOUT
                )
                opened = writer
            except (OSError, TimeoutError) as exc:
                reason = exc.strerror or str(exc) or type(exc).__name__
                if isinstance(exc, ConnectionRefusedError):
                    reason = f"dial tcp {self.address}:{pair.port}: connect: connection refused"
                text = portforward.forward_error(pair.port, self.pod, self.uid, reason)
                await self._write(spdy.data(pair.error_stream, text.encode()))
                return
            upload = asyncio.create_task(self._upload(pair, writer))
            try:
                while chunk := await reader.read(CHUNK):
                    await self._write(spdy.data(pair.data_stream, chunk))
            except OSError:
                pass
            finally:
                upload.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await upload
        finally:
            if opened is not None:
                opened.close()
            await self._write(spdy.data(pair.data_stream, b"", fin=True))
            await self._write(spdy.data(pair.error_stream, b"", fin=True))

    async def _upload(self, pair: _Pair, writer: asyncio.StreamWriter) -> None:
        while (chunk := await pair.inbound.get()) is not None:
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
