"""A port-forward session driven frame by frame, as kubectl's SPDY client drives it, against a
TCP echo server on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import zlib
from collections.abc import Iterator
from typing import Any

from localcluster.apiserver import spdy
from localcluster.apiserver.portforward_io import Session


class Client:
    """The client half: compresses its headers on its own zlib stream, reads the server's."""

    def __init__(self) -> None:
        self.deflate = zlib.compressobj(zdict=spdy.DICTIONARY)
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox: list[spdy.Frame] = []
        self.reader = spdy.FrameReader()
        self.codec = spdy.HeaderCodec()

    def syn_stream(self, stream_id: int, kind: str, port: int, request_id: str) -> None:
        headers = {"streamtype": [kind], "port": [str(port)], "requestid": [request_id]}
        block = self.deflate.compress(spdy.pack_headers(headers))
        block += self.deflate.flush(zlib.Z_SYNC_FLUSH)
        payload = struct.pack(">IIBB", stream_id, 0, 0, 0) + block
        self.send(spdy.control(spdy.SYN_STREAM, 0, payload))

    def send(self, frame: bytes) -> None:
        self.inbox.put_nowait({"type": "websocket.receive", "bytes": frame})

    async def receive(self) -> dict[str, Any]:
        return await self.inbox.get()

    async def sent(self, message: Any) -> None:
        self.outbox += self.reader.feed(message["bytes"])

    async def until(self, done: Any, timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while not done():
                await asyncio.sleep(0.01)


def data_of(frames: list[spdy.Frame], stream_id: int) -> tuple[bytes, bool]:
    mine = [f for f in frames if isinstance(f, spdy.DataFrame) and f.stream_id == stream_id]
    return b"".join(f.data for f in mine), any(f.fin for f in mine)


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while chunk := await reader.read(1024):
        writer.write(chunk)
    writer.close()


def test_a_session_replies_pings_forwards_and_reports_refusals() -> None:
    async def scenario() -> None:
        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        with closed_port() as closed:
            client = Client()
            session = asyncio.create_task(
                Session("127.0.0.1", "web", "u1", client.receive, client.sent).run()
            )
            client.send(spdy.ping(1))
            client.syn_stream(1, "error", port, "0")
            client.syn_stream(3, "data", port, "0")
            client.send(spdy.data(3, b"hello"))
            client.send(spdy.data(3, b"", fin=True))
            client.syn_stream(5, "error", closed, "1")
            client.syn_stream(7, "data", closed, "1")
            await client.until(lambda: data_of(client.outbox, 3)[1])
            await client.until(lambda: data_of(client.outbox, 5)[1])
            client.inbox.put_nowait({"type": "websocket.disconnect"})
            await session
        server.close()
        controls = [f for f in client.outbox if isinstance(f, spdy.ControlFrame)]
        assert spdy.ControlFrame(spdy.PING, 0, struct.pack(">I", 1)) in controls
        replies = [f for f in controls if f.kind == spdy.SYN_REPLY]
        assert [spdy.parse_stream_id(f) for f in replies] == [1, 3, 5, 7]
        assert data_of(client.outbox, 3) == (b"hello", True)
        assert data_of(client.outbox, 1) == (b"", True)
        refused, _ = data_of(client.outbox, 5)
        assert refused.decode() == (
            f"error forwarding port {closed} to pod web, uid u1: "
            f"dial tcp 127.0.0.1:{closed}: connect: connection refused"
        )

    asyncio.run(scenario())


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port bound but not listening, for as long as the block runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
