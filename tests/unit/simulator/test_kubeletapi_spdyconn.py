"""The server's end of an SPDY/3.1 connection, over a real socket pair: streams accepted or reset,
data both ways with half-closes, pings answered, and a broken peer sent away."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import deque

from localcluster.simulator import spdy
from localcluster.simulator.spdyconn import SpdyConnection


class Peer:
    """The client's end: raw frames on a socket, read back with the codec."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.codec = spdy.HeaderCodec()
        self.frames = spdy.FrameReader()
        self.pending: deque[spdy.Frame] = deque()

    async def send(self, frame: bytes) -> None:
        await asyncio.get_running_loop().sock_sendall(self.sock, frame)

    async def syn(self, stream_id: int, **headers: str) -> None:
        block = self.codec.encode({k: [v] for k, v in headers.items()})
        await self.send(spdy.syn_stream(stream_id, block))

    async def next_frame(self) -> spdy.Frame:
        loop = asyncio.get_running_loop()
        while not self.pending:
            chunk = await asyncio.wait_for(loop.sock_recv(self.sock, 65536), 5)
            assert chunk, "the server closed the connection"
            self.pending.extend(self.frames.feed(chunk))
        return self.pending.popleft()


async def connected(check_port: bool = False) -> tuple[SpdyConnection, Peer]:
    server_end, client_end = socket.socketpair()
    client_end.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=server_end)

    def check(_stream_id: int, headers: spdy.Headers) -> str | None:
        return None if not check_port or headers.get("port") else "port header is required"

    connection = SpdyConnection(reader, writer, check=check)
    connection.start()
    return connection, Peer(client_end)


def test_streams_carry_data_both_ways_and_half_close() -> None:
    async def scenario() -> None:
        connection, peer = await connected()
        await peer.syn(1, streamtype="stdin")
        reply = await peer.next_frame()
        assert isinstance(reply, spdy.ControlFrame)
        assert reply.kind == spdy.SYN_REPLY
        assert spdy.parse_stream_id(reply) == 1
        stream = await connection.next_stream()
        assert stream is not None
        assert stream.header("streamType") == "stdin"
        await peer.send(spdy.data(1, b"typed") + spdy.data(1, b"", fin=True))
        assert await stream.read_all() == b"typed"
        await stream.write(b"echoed")
        await stream.close()
        assert await peer.next_frame() == spdy.DataFrame(1, 0, b"echoed")
        assert await peer.next_frame() == spdy.DataFrame(1, spdy.FLAG_FIN, b"")
        await stream.write(b"after close")  # dropped: the server's half is closed
        await connection.shutdown(linger=0)
        goaway = await peer.next_frame()
        assert isinstance(goaway, spdy.ControlFrame)
        assert goaway.kind == spdy.GOAWAY
        peer.sock.close()

    asyncio.run(scenario())


def test_refused_streams_are_reset_and_pings_answered() -> None:
    async def scenario() -> None:
        connection, peer = await connected(check_port=True)
        await peer.syn(1, streamtype="data")
        reset = await peer.next_frame()
        assert reset == spdy.ControlFrame(spdy.RST_STREAM, 0, struct.pack(">II", 1, spdy.CANCEL))
        # The header zlib stream goes on after a refused stream: the next one still decodes.
        await peer.syn(3, streamtype="data", port="80")
        reply = await peer.next_frame()
        assert isinstance(reply, spdy.ControlFrame)
        assert (reply.kind, spdy.parse_stream_id(reply)) == (spdy.SYN_REPLY, 3)
        await peer.send(spdy.ping(7))
        assert await peer.next_frame() == spdy.ControlFrame(spdy.PING, 0, struct.pack(">I", 7))
        peer.sock.close()
        assert await connection.next_stream() is not None  # stream 3
        assert await asyncio.wait_for(connection.next_stream(), 5) is None

    asyncio.run(scenario())


def test_a_peer_that_does_not_speak_spdy3_is_sent_away() -> None:
    async def scenario() -> None:
        connection, peer = await connected()
        await peer.send(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")  # SPDY/2 PING
        goaway = await peer.next_frame()
        assert isinstance(goaway, spdy.ControlFrame)
        assert goaway.kind == spdy.GOAWAY
        assert goaway.payload[4:] == struct.pack(">I", spdy.PROTOCOL_ERROR)
        await asyncio.wait_for(connection.closed.wait(), 5)
        peer.sock.close()

    asyncio.run(scenario())
