"""exec, attach and port-forward once the connection speaks SPDY/3.1: the processes, files and
sockets behind the streams (kubelet's pkg/cri/streaming, for the pods this node runs for real).

- exec runs the command with `nsenter` in the container's namespaces and root, with the
  container's environment; stdin, stdout and stderr are copied both ways (or a pseudo-terminal
  with tty), and the exit status goes on the error stream.
- attach follows the container's output from now on, until its run ends.
- port-forward connects to the pod's port from a socket made inside the pod's network namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import logging
import os
import pty
import signal
import socket
import struct
import sys
import termios
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.simulator import remotecommand
from localcluster.simulator.remotecommand import StreamOptions, StreamType
from localcluster.simulator.sandbox import dies_with_node
from localcluster.simulator.spdyconn import SpdyConnection, SpdyStream

log = logging.getLogger(__name__)

CHUNK = 32 * 1024
# After the command exits, how long its output may still drain (a background child can hold it).
OUTPUT_DRAIN = 2.0
CONNECT_TIMEOUT = 10.0
FOLLOW_POLL = 0.2
CLONE_NEWNET = 0x40000000
# The child becomes a session leader with the terminal as its controlling one, then runs argv.
_TTY_SHIM = (
    "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


async def wait_for_streams(
    connection: SpdyConnection,
    expected: frozenset[StreamType],
    patience: float = remotecommand.STREAM_CREATION_TIMEOUT,
) -> dict[StreamType, SpdyStream] | None:
    """The streams the client opens first, by type; None when it does not open them in time."""
    streams: dict[StreamType, SpdyStream] = {}

    async def collect() -> None:
        while set(streams) != expected:
            stream = await connection.next_stream()
            if stream is None:
                raise ConnectionError("the client went away")
            kind = remotecommand.stream_type(stream.headers)
            if kind is None or kind not in expected:
                log.warning("unexpected stream", extra={"stream_type": stream.header("streamtype")})
                continue
            streams[kind] = stream

    try:
        await asyncio.wait_for(collect(), patience)
    except (TimeoutError, ConnectionError) as err:
        log.warning("streams not opened", extra={"error": str(err) or "timed out"})
        return None
    return streams


async def finish(
    connection: SpdyConnection,
    streams: dict[StreamType, SpdyStream],
    protocol: str,
    status: remotecommand.Status,
) -> None:
    """Close the output streams, write the status on the error stream, and end the connection."""
    for output in (streams.get("stdout"), streams.get("stderr")):
        if output is not None:
            await output.close()
    error = streams["error"]
    payload = remotecommand.error_stream_payload(protocol, status)
    if payload:
        await error.write(payload)
    await error.close()
    await connection.shutdown()


# -- exec ------------------------------------------------------------------------------------


def _environment(pid: int) -> dict[str, str]:
    return remotecommand.parse_environ(Path(f"/proc/{pid}/environ").read_bytes())


async def _copy_out(source: asyncio.StreamReader, stream: SpdyStream) -> None:
    with contextlib.suppress(OSError):  # a terminal reads EIO once its last user closed it
        while chunk := await source.read(CHUNK):
            await stream.write(chunk)


async def _copy_in(stream: SpdyStream, sink: asyncio.StreamWriter) -> None:
    try:
        while chunk := await stream.read():
            sink.write(chunk)
            await sink.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        sink.close()


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _await_exit(
    connection: SpdyConnection, process: asyncio.subprocess.Process
) -> int | None:
    """The command's exit code; None (and the command killed) when the client goes away."""
    exited = asyncio.ensure_future(process.wait())
    lost = asyncio.ensure_future(connection.closed.wait())
    await asyncio.wait({exited, lost}, return_when=asyncio.FIRST_COMPLETED)
    lost.cancel()
    if not exited.done():
        _kill(process)
        await exited
        return None
    return remotecommand.exit_code(exited.result())


async def _drain(tasks: Sequence[asyncio.Task[None]]) -> None:
    if tasks:
        _, pending = await asyncio.wait(tasks, timeout=OUTPUT_DRAIN)
        for task in pending:
            task.cancel()


async def run_exec(
    connection: SpdyConnection,
    protocol: str,
    options: StreamOptions,
    pid: int,
    command: Sequence[str],
    nsenter: str,
) -> None:
    streams = await wait_for_streams(connection, remotecommand.expected_streams(options, protocol))
    if streams is None:
        await connection.shutdown(linger=0)
        return
    argv = remotecommand.nsenter_argv(pid, command, nsenter)
    try:
        environment = _environment(pid)
        if options.tty:
            code = await _exec_with_terminal(connection, streams, argv, environment)
        else:
            code = await _exec_with_pipes(connection, streams, argv, environment)
    except OSError as err:
        message = f"error executing command in container: {err.strerror or err}"
        await finish(connection, streams, protocol, remotecommand.internal_error(message))
        return
    if code is None:
        await connection.shutdown(linger=0)
        return
    log.info("exec finished", extra={"pid": pid, "command": list(command), "exit_code": code})
    status = remotecommand.success() if code == 0 else remotecommand.exit_code_status(command, code)
    await finish(connection, streams, protocol, status)


async def _exec_with_pipes(
    connection: SpdyConnection,
    streams: dict[StreamType, SpdyStream],
    argv: list[str],
    environment: dict[str, str],
) -> int | None:
    pipe, nowhere = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
    process = await asyncio.create_subprocess_exec(
        *dies_with_node(argv),
        stdin=pipe if "stdin" in streams else nowhere,
        stdout=pipe if "stdout" in streams else nowhere,
        stderr=pipe if "stderr" in streams else nowhere,
        env=environment,
        start_new_session=True,
    )
    outputs = [
        asyncio.create_task(_copy_out(source, stream))
        for source, stream in (
            (process.stdout, streams.get("stdout")),
            (process.stderr, streams.get("stderr")),
        )
        if source is not None and stream is not None
    ]
    feeder = (
        asyncio.create_task(_copy_in(streams["stdin"], process.stdin))
        if process.stdin is not None
        else None
    )
    try:
        code = await _await_exit(connection, process)
        await _drain(outputs if code is not None else [])
    finally:
        for task in [*outputs, *([feeder] if feeder else [])]:
            task.cancel()
    return code


def _resize(terminal: int, size: remotecommand.TerminalSize) -> None:
    with contextlib.suppress(OSError):
        fcntl.ioctl(
            terminal, termios.TIOCSWINSZ, struct.pack("HHHH", size.height, size.width, 0, 0)
        )


async def _follow_resizes(stream: SpdyStream, terminal: int) -> None:
    rest = b""
    while chunk := await stream.read():
        sizes, rest = remotecommand.terminal_sizes(rest + chunk)
        for size in sizes:
            _resize(terminal, size)


async def _type_into(stream: SpdyStream, terminal: int) -> None:
    while chunk := await stream.read():
        while chunk:
            try:
                written = os.write(terminal, chunk)
            except BlockingIOError:
                await asyncio.sleep(0.01)
                continue
            except OSError:
                return
            chunk = chunk[written:]


async def _exec_with_terminal(
    connection: SpdyConnection,
    streams: dict[StreamType, SpdyStream],
    argv: list[str],
    environment: dict[str, str],
) -> int | None:
    terminal, child_end = pty.openpty()
    try:
        os.set_blocking(terminal, False)
        process = await asyncio.create_subprocess_exec(
            *dies_with_node([sys.executable, "-c", _TTY_SHIM, *argv]),
            stdin=child_end,
            stdout=child_end,
            stderr=child_end,
            env=environment,
        )
    except BaseException:
        os.close(terminal)
        raise
    finally:
        os.close(child_end)
    loop = asyncio.get_running_loop()
    screen = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(screen), os.fdopen(os.dup(terminal), "rb", 0)
    )
    tasks = []
    if "stdout" in streams:
        tasks.append(asyncio.create_task(_copy_out(screen, streams["stdout"])))
    helpers = [
        asyncio.create_task(job)
        for job in (
            _type_into(streams["stdin"], terminal) if "stdin" in streams else None,
            _follow_resizes(streams["resize"], terminal) if "resize" in streams else None,
        )
        if job is not None
    ]
    try:
        code = await _await_exit(connection, process)
        await _drain(tasks if code is not None else [])
    finally:
        for task in [*tasks, *helpers]:
            task.cancel()
        transport.close()
        os.close(terminal)
    return code


# -- attach ----------------------------------------------------------------------------------


async def run_attach(
    connection: SpdyConnection,
    protocol: str,
    options: StreamOptions,
    log_file: Path,
    offset: int,
    still_running: Callable[[], bool],
) -> None:
    """The container's output from `offset` on (where its log file ended when the client asked;
    stdout and stderr share it), until its run ends or the client goes away."""
    streams = await wait_for_streams(connection, remotecommand.expected_streams(options, protocol))
    if streams is None:
        await connection.shutdown(linger=0)
        return
    target = streams.get("stdout") or streams.get("stderr")
    while not connection.closed.is_set():
        chunk = await asyncio.to_thread(read_from, log_file, offset)
        if chunk:
            offset += len(chunk)
            if target is not None:
                await target.write(chunk)
            continue
        if not still_running():
            break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(connection.closed.wait(), FOLLOW_POLL)
    if connection.closed.is_set():
        return
    await finish(connection, streams, protocol, remotecommand.success())


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_from(path: Path, offset: int, most: int = 1 << 20) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(most)
    except OSError:
        return b""


# -- port-forward ----------------------------------------------------------------------------


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
