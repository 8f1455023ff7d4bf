"""A container's last step before its command: in the container's own mount namespace (private
propagation), bind its volumes at their mount paths, then exec the command in its working dir.

`python -m localcluster.simulator.launch [--mount SRC=DST[:ro]]… [--workdir DIR] [--hostname H]
-- ARGV…`

Every source is opened before anything is mounted, so a volume mounted over a directory (say
`/tmp`) never hides the source of a later one. The installation that plays the image (the Python
running this, its packages, the command) stays visible at its own path even when a volume is
mounted over one of its ancestors, as an image's files stay visible beside a container's volumes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
O_PATH = getattr(os, "O_PATH", 0o10000000)


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool


def parse_mount(text: str) -> Mount:
    source, sep, rest = text.partition("=")
    if not sep or not source or not rest:
        raise ValueError(f'"{text}" is not SRC=DST[:ro]')
    read_only = rest.endswith(":ro")
    target = rest[:-3] if read_only else rest
    if not target.startswith("/"):
        raise ValueError(f'mount path "{target}" must be absolute')
    return Mount(source, target, read_only)


def _mount(source: str, target: str, flags: int) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.mount(source.encode(), target.encode(), None, flags, None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def covered(paths: list[str], mounts: list[Mount]) -> list[str]:
    """The paths a mount target would hide (the target is a proper ancestor), outermost only."""
    targets = [m.target.rstrip("/") or "/" for m in mounts]
    hidden = sorted(
        {
            os.path.normpath(p)
            for p in paths
            if any(os.path.normpath(p).startswith(t.rstrip("/") + "/") for t in targets)
        }
    )
    outermost: list[str] = []
    for path in hidden:
        if not any(path.startswith(kept + "/") for kept in outermost):
            outermost.append(path)
    return outermost


def installation_paths(command: list[str]) -> list[str]:
    """What the container's command needs from this machine: the interpreter, its packages, the
    import path and the command's own directory."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]
    found = shutil.which(command[0]) if command else None
    if found:
        paths.append(str(Path(found).parent))
    return [p for p in paths if p and Path(p).is_dir()]


def apply_mounts(mounts: list[Mount], keep: Sequence[str] = ()) -> None:
    handles = [os.open(m.source, O_PATH) for m in mounts]
    kept = [(path, os.open(path, O_PATH)) for path in covered(list(keep), mounts)]
    for mount, handle in zip(mounts, handles, strict=True):
        target = Path(mount.target)
        if Path(mount.source).is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch(exist_ok=True)
        _mount(f"/proc/self/fd/{handle}", mount.target, MS_BIND | MS_REC)
        if mount.read_only:
            _mount("none", mount.target, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for path, handle in kept:
        Path(path).mkdir(parents=True, exist_ok=True)
        _mount(f"/proc/self/fd/{handle}", path, MS_BIND | MS_REC)
    for handle in [*handles, *(h for _, h in kept)]:
        os.close(handle)


def main(argv: list[str]) -> None:
    mounts: list[Mount] = []
    workdir = ""
    hostname = ""
    index = 0
    while index < len(argv) and argv[index] != "--":
        flag = argv[index]
        value = argv[index + 1] if index + 1 < len(argv) else ""
        if flag == "--mount":
            mounts.append(parse_mount(value))
        elif flag == "--workdir":
            workdir = value
        elif flag == "--hostname":
            hostname = value
        else:
            raise SystemExit(f"launch: unknown flag {flag}")
        index += 2
    command = argv[index + 1 :]
    if not command:
        raise SystemExit("launch: no command after --")
    apply_mounts(mounts, installation_paths(command))
    if hostname:
        socket.sethostname(hostname)  # in the container's own UTS namespace
    if workdir:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        os.chdir(workdir)
    try:
        os.execvp(command[0], command)  # noqa: S606 - the container's own command
    except OSError as err:
        print(f"exec {command[0]}: {err.strerror}", file=sys.stderr)  # noqa: T201
        raise SystemExit(127) from err


if __name__ == "__main__":
    main(sys.argv[1:])
