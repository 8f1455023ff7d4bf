"""Copy bytes both ways between two asyncio streams until either side closes."""

from __future__ import annotations

import asyncio
import contextlib

CHUNK = 65536


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def splice(
    left: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    right: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    try:
        await asyncio.gather(_pump(left[0], right[1]), _pump(right[0], left[1]))
    finally:
        for writer in (left[1], right[1]):
            writer.close()


async def read_port(reader: asyncio.StreamReader) -> int:
    """The `PORT\\n` header a forwarded connection starts with."""
    line = await asyncio.wait_for(reader.readline(), 5)
    port = int(line.strip())
    if not 0 < port < 65536:
        raise ValueError(f"port {port} is out of range")
    return port
