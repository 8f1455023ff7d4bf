"""port-forward once the connection speaks SPDY/3.1 (kubelet's pkg/cri/streaming, for the pods
this node runs for real): each forwarded connection is a socket made inside the pod's network
namespace, copied both ways with its pair of data and error streams."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import socket
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from localcluster.simulator import remotecommand
from localcluster.simulator.kubeletstreams import CHUNK
from localcluster.simulator.spdyconn import SpdyConnection, SpdyStream

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
CLONE_NEWNET = 0x40000000


class ConnectError(Exception):
    pass


def _socket_in(netns: str, family: socket.AddressFamily) -> socket.socket:
    """A TCP socket of the network namespace `netns`; runs on a thread of its own, which is the
    only one to change namespace (a socket keeps the namespace it was made in)."""
    libc = ctypes.CDLL(None, use_errno=True)
    handle = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if libc.setns(handle, CLONE_NEWNET) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"setns {netns}: {os.strerror(code)}")
    finally:
        os.close(handle)
    return socket.socket(family, socket.SOCK_STREAM)


async def socket_in_netns(netns: str, family: socket.AddressFamily) -> socket.socket:
    loop = asyncio.get_running_loop()
    made: asyncio.Future[socket.socket] = loop.create_future()

    def hand_over(sock: socket.socket | None, err: OSError | None) -> None:
        if made.done():  # the caller gave up meanwhile
            if sock is not None:
                sock.close()
        elif sock is not None:
            made.set_result(sock)
        elif err is not None:
            made.set_exception(err)

    def make() -> None:
        try:
            sock, err = _socket_in(netns, family), None
        except OSError as failure:
            sock, err = None, failure
        try:
            loop.call_soon_threadsafe(hand_over, sock, err)
        except RuntimeError:  # the loop closed meanwhile
            if sock is not None:
                sock.close()

    threading.Thread(target=make, name="netns-socket", daemon=True).start()
    return await made


def _dial_error(network: str, address: str, err: BaseException) -> str:
    """Go's wording: `dial tcp4 127.0.0.1:9: connect: connection refused`."""
    if isinstance(err, OSError) and err.errno:
        reason = os.strerror(err.errno)
    else:
        reason = str(err) or "i/o timeout"
    return f"dial {network} {address}: connect: {reason[:1].lower()}{reason[1:]}"


async def connect_in_pod(
    netns: str, port: int, sandbox: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """localhost:port inside the pod: IPv4 first, then IPv6, as containerd tries them."""
    loop = asyncio.get_running_loop()
    failures = []
    for family, network, host, shown in (
        (socket.AF_INET, "tcp4", "127.0.0.1", f"127.0.0.1:{port}"),
        (socket.AF_INET6, "tcp6", "::1", f"[::1]:{port}"),
    ):
        try:
            sock = await socket_in_netns(netns, family)
        except OSError as err:
            failures.append(_dial_error(network, shown, err))
            continue
        try:
            sock.setblocking(False)
            await asyncio.wait_for(loop.sock_connect(sock, (host, port)), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as err:
            sock.close()
            failures.append(_dial_error(network, shown, err))
            continue
        return await asyncio.open_connection(sock=sock)
    raise ConnectError(remotecommand.connect_failure(port, sandbox, *failures))


@dataclass
class _Pair:
    request_id: str
    port: int
    data: SpdyStream | None = None
    error: SpdyStream | None = None
    timer: asyncio.Task[None] | None = None


class PortForwardSession:
    """One port-forward connection: per pair of streams, one TCP connection inside the pod."""

    def __init__(self, connection: SpdyConnection, netns: str, pod: str, uid: str) -> None:
        self.connection = connection
        self.netns = netns
        self.pod = pod
        self.uid = uid
        self._pairs: dict[str, _Pair] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, job: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(job)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def run(self) -> None:
        try:
            while (stream := await self.connection.next_stream()) is not None:
                await self._on_stream(stream)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self.connection.shutdown(linger=0)

    async def _on_stream(self, stream: SpdyStream) -> None:
        request = remotecommand.forward_stream(stream.headers, stream.id)
        pair = self._pairs.get(request.request_id)
        if pair is None:
            pair = self._pairs[request.request_id] = _Pair(request.request_id, request.port)
            pair.timer = self._spawn(self._expire(pair))
        duplicate = (request.kind == "data" and pair.data is not None) or (
            request.kind == "error" and pair.error is not None
        )
        if duplicate:
            message = (
                f"error processing stream for request {request.request_id}: "
                f"{request.kind} stream already assigned"
            )
            if pair.error is not None:
                await pair.error.write(message.encode())
            await stream.reset()
            return
        if request.kind == "data":
            pair.data = stream
        else:
            pair.error = stream
        if pair.data is not None and pair.error is not None:
            if pair.timer is not None:
                pair.timer.cancel()
            del self._pairs[request.request_id]
            self._spawn(self._forward(pair, pair.data, pair.error))

    async def _expire(self, pair: _Pair) -> None:
        await asyncio.sleep(remotecommand.STREAM_CREATION_TIMEOUT)
        self._pairs.pop(pair.request_id, None)
        if pair.error is not None:
            await pair.error.write(
                f"timed out waiting for streams of request {pair.request_id}".encode()
            )
            await pair.error.close()
        if pair.data is not None:
            await pair.data.reset()

    async def _forward(self, pair: _Pair, data: SpdyStream, error: SpdyStream) -> None:
        try:
            reader, writer = await connect_in_pod(self.netns, pair.port, self.pod)
        except (ConnectError, OSError) as err:
            reason = str(err)
            log.info(
                "port-forward failed", extra={"pod": self.pod, "port": pair.port, "error": reason}
            )
            text = remotecommand.forward_error(pair.port, self.pod, self.uid, reason)
            await error.write(text.encode())
            await error.close()
            await data.close()
            return
        upload = asyncio.create_task(self._upload(data, writer))
        try:
            with contextlib.suppress(ConnectionError, OSError):
                while chunk := await reader.read(CHUNK):
                    await data.write(chunk)
        finally:
            upload.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await upload
            writer.close()
            await data.close()
            await error.close()

    @staticmethod
    async def _upload(data: SpdyStream, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await data.read():
                writer.write(chunk)
                await writer.drain()
            if data.reset_by_client:
                writer.close()  # the client gave up on this connection: so does the pod's end
            elif writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            writer.close()
