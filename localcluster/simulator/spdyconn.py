"""The server's end of an SPDY/3.1 connection over an upgraded HTTP connection, in asyncio: the
client opens streams (SYN_STREAM), the server accepts each (SYN_REPLY) or resets it, and both
sides write DATA frames and half-close with FIN.

As with spdystream (what kube-apiserver, kubectl and kubelet use), there is no flow control:
WINDOW_UPDATE and SETTINGS change nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from localcluster.simulator import spdy

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
# How long the connection waits for the client to close it after the server's GOAWAY.
CLOSE_LINGER = 5.0


class SpdyStream:
    """One stream the client opened: its headers, what arrives on it and the server's writes."""

    def __init__(self, connection: SpdyConnection, stream_id: int, headers: spdy.Headers) -> None:
        self.connection = connection
        self.id = stream_id
        self.headers = headers
        self._inbound: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._ended = False  # the client's half is closed (FIN, reset or connection gone)
        self._closed = False  # the server's half is closed
        self.reset_by_client = False

    def header(self, name: str) -> str:
        return (self.headers.get(name.lower()) or [""])[0]

    async def read(self) -> bytes:
        """The next bytes the client sent; b"" once its half of the stream is closed."""
        chunk = await self._inbound.get()
        if chunk is None:
            self._inbound.put_nowait(None)  # every later read sees the end too
            return b""
        return chunk

    async def read_all(self) -> bytes:
        parts = []
        while chunk := await self.read():
            parts.append(chunk)
        return b"".join(parts)

    async def write(self, data: bytes) -> None:
        if self._closed or self.reset_by_client:
            return
        for start in range(0, len(data), spdy.MAX_LENGTH):
            await self.connection.send(spdy.data(self.id, data[start : start + spdy.MAX_LENGTH]))

    async def close(self) -> None:
        """Half-close: FIN, once."""
        if not self._closed and not self.reset_by_client:
            self._closed = True
            await self.connection.send(spdy.data(self.id, b"", fin=True))

    async def reset(self, status: int = spdy.CANCEL) -> None:
        if not self._closed:
            self._closed = True
            await self.connection.send(spdy.rst_stream(self.id, status))
        self.end()

    def deliver(self, chunk: bytes) -> None:
        if not self._ended:
            self._inbound.put_nowait(chunk)

    def end(self) -> None:
        """The client's half is over; a reader waiting sees b""."""
        if not self._ended:
            self._ended = True
            self._inbound.put_nowait(None)


# Decides on a new stream from its id and headers: None accepts it, a message resets it.
StreamCheck = Callable[[int, spdy.Headers], str | None]


def accept_any(_stream_id: int, _headers: spdy.Headers) -> str | None:
    return None


class SpdyConnection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        initial: bytes = b"",
        check: StreamCheck = accept_any,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._initial = initial
        self._check = check
        self._codec = spdy.HeaderCodec()
        self._frames = spdy.FrameReader()
        self._write_lock = asyncio.Lock()
        self._streams: dict[int, SpdyStream] = {}
        self._last_stream = 0
        self.accepted: asyncio.Queue[SpdyStream] = asyncio.Queue()
        self.closed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def send(self, frame: bytes) -> None:
        if self.closed.is_set():
            return
        async with self._write_lock:
            try:
                self._writer.write(frame)
                await self._writer.drain()
            except (ConnectionError, OSError, RuntimeError):
                self._lost()

    async def next_stream(self) -> SpdyStream | None:
        """The next accepted stream, or None once the connection is gone."""
        getter = asyncio.ensure_future(self.accepted.get())
        closed = asyncio.ensure_future(self.closed.wait())
        try:
            await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
            if not getter.done():
                getter.cancel()
        if getter.done() and not getter.cancelled():
            return getter.result()
        return None

    async def shutdown(self, linger: float = CLOSE_LINGER) -> None:
        """GOAWAY, then wait a moment for the client to close (closing first could reset the
        connection under data it has not read yet), then close."""
        await self.send(spdy.goaway(self._last_stream))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.closed.wait(), linger)
        self._lost()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def _lost(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            for stream in self._streams.values():
                stream.end()
        with contextlib.suppress(Exception):
            self._writer.close()

    async def _run(self) -> None:
        try:
            chunk = self._initial
            while True:
                for frame in self._frames.feed(chunk):
                    await self._on_frame(frame)
                chunk = await self._reader.read(READ_CHUNK)
                if not chunk:
                    return
        except spdy.ProtocolError as err:
            log.warning("spdy protocol error", extra={"error": str(err)})
            await self.send(spdy.goaway(self._last_stream, spdy.PROTOCOL_ERROR))
        except (ConnectionError, OSError):
            pass
        finally:
            self._lost()

    async def _on_frame(self, frame: spdy.Frame) -> None:
        if isinstance(frame, spdy.DataFrame):
            stream = self._streams.get(frame.stream_id)
            if stream is not None:
                if frame.data:
                    stream.deliver(frame.data)
                if frame.fin:
                    stream.end()
            return
        if frame.kind == spdy.SYN_STREAM:
            await self._on_syn_stream(spdy.parse_syn_stream(frame))
        elif frame.kind == spdy.PING:
            await self.send(spdy.ping(spdy.parse_ping(frame)))
        elif frame.kind == spdy.RST_STREAM:
            stream = self._streams.get(spdy.parse_stream_id(frame))
            if stream is not None:
                stream.end()
                stream.reset_by_client = True
        # GOAWAY: the client opens no more streams; those open go on until it closes.

    async def _on_syn_stream(self, syn: spdy.SynStream) -> None:
        # Every header block inflates, accepted or not: the zlib stream spans the connection.
        headers = self._codec.decode(syn.header_block)
        self._last_stream = max(self._last_stream, syn.stream_id)
        refusal = self._check(syn.stream_id, headers)
        if refusal is not None:
            log.info("stream refused", extra={"stream": syn.stream_id, "reason": refusal})
            await self.send(spdy.rst_stream(syn.stream_id, spdy.CANCEL))
            return
        stream = SpdyStream(self, syn.stream_id, headers)
        self._streams[syn.stream_id] = stream
        if syn.fin:
            stream.end()
        await self.send(spdy.syn_reply(syn.stream_id, self._codec.encode({})))
        self.accepted.put_nowait(stream)
