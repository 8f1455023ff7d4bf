"""exec and attach once the connection speaks SPDY/3.1: the processes and files behind the streams
(kubelet's pkg/cri/streaming, for the pods this node runs for real; port-forward is in
`portforward`).

- exec runs the command with `nsenter` in the container's namespaces and root, with the
  container's environment; stdin, stdout and stderr are copied both ways (or a pseudo-terminal
  with tty), and the exit status goes on the error stream.
- attach follows the container's output from now on, until its run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import pty
import signal
import struct
import sys
import termios
from collections.abc import Callable, Sequence
from pathlib import Path

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
