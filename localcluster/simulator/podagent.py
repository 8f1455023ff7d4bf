"""The pod sandbox's agent: holds the pod's network namespace (its pid is the namespace's; the
node wires `eth0` and the pod's address into it, see `podnet.py`), brings loopback up, and joins
the pod's loopback to the node through two Unix sockets.

- `IN` (served here): a connection that starts with `PORT\\n` is joined to 127.0.0.1:PORT in the
  pod, so the node reaches a port the pod serves on its loopback only;
- each `--outbound PORT` is a listener on 127.0.0.1:PORT in the pod whose connections go out
  through `OUT` (served by the node) to 127.0.0.1:PORT on the node: how pods reach the API server.

`python -m localcluster.simulator.podagent --in IN --out OUT [--outbound PORT]… --ready FILE`
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import signal
import socket
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path

import click

from localcluster.simulator.splice import read_port, splice

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def loopback_up() -> None:
    """A new network namespace has `lo` down; bring it up (what `ip link set lo up` does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


async def _inbound(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        port = await read_port(reader)
        target = await asyncio.open_connection("127.0.0.1", port)
    except (OSError, ValueError, TimeoutError):
        writer.close()
        return
    await splice((reader, writer), target)


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _outbound(out_socket: str, port: int) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            target = await asyncio.open_unix_connection(out_socket)
        except OSError:
            writer.close()
            return
        target[1].write(f"{port}\n".encode())
        await splice((reader, writer), target)

    return handle


async def serve(in_socket: str, out_socket: str, outbound: list[int], ready: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    servers = [await asyncio.start_unix_server(_inbound, in_socket)]
    for port in outbound:
        servers.append(await asyncio.start_server(_outbound(out_socket, port), "127.0.0.1", port))
    await asyncio.to_thread(ready.write_text, "ready\n")
    await stop.wait()
    for server in servers:
        server.close()


@click.command()
@click.option("--in", "in_socket", required=True)
@click.option("--out", "out_socket", required=True)
@click.option("--outbound", type=int, multiple=True)
@click.option("--ready", type=click.Path(path_type=Path), required=True)
def main(in_socket: str, out_socket: str, outbound: tuple[int, ...], ready: Path) -> None:
    loopback_up()
    Path(in_socket).unlink(missing_ok=True)
    try:
        asyncio.run(serve(in_socket, out_socket, list(outbound), ready))
    finally:
        with contextlib.suppress(OSError):
            Path(in_socket).unlink()


if __name__ == "__main__":
    main()
