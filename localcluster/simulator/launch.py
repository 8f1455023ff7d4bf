"""A container's last step before its command: in the container's own mount namespace (private
propagation), build the container's root, mount its volumes at their paths inside it, chroot into
it and exec the command in its working dir.

`python -m localcluster.simulator.launch [--mount SRC=DST[:ro]]… [--workdir DIR] [--hostname H]
-- ARGV…`

The root is a tmpfs that mirrors the host entry by entry: each host entry is bound read-only,
except the directories on the way to a mount path, which are tmpfs directories mirroring the
host's one level further, so that the mount point is made in the tmpfs and never on the host.
`/tmp` is the container's own, empty. Mount points below another volume are made in that volume
(inside the pod's folder), as kubelet does. So nothing is created or changed on the host, and two
containers that mount the same path, one as a file and one as a directory, do not meet.

Every source is opened before anything is mounted, so a volume mounted over a directory (say
`/tmp`) never hides the source of a later one. The installation that plays the image (the Python
running this, its packages, the command) stays visible at its own path even when it lies under
`/tmp` or under a volume's mount path, as an image's files stay visible beside a container's
volumes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import socket
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
O_PATH = getattr(os, "O_PATH", 0o10000000)

# Where the root is assembled: /tmp of this mount namespace, covered by a fresh tmpfs first, so
# the host's /tmp is never touched and the root never contains itself.
STAGING = "/tmp"  # noqa: S108 - covered by a private tmpfs before use
ROOT = "/tmp/.root"  # noqa: S108
# Host entries the root gets in their own way rather than as a read-only copy.
PRIVATE_TMP = "/tmp"  # noqa: S108
KERNEL_VIEWS = {"/proc": False, "/sys": True, "/dev": True}  # path → bound read-only
SHARED_MEMORY = "/dev/shm"  # noqa: S108 - the container's own tmpfs


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
    return Mount(source, os.path.normpath(target), read_only)


def _mount(source: str, target: str, flags: int, fstype: str | None = None) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    kind = fstype.encode() if fstype else None
    if libc.mount(source.encode(), target.encode(), kind, flags, None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def _is_under(path: str, ancestor: str) -> bool:
    return ancestor == "/" or path == ancestor or path.startswith(ancestor.rstrip("/") + "/")


def mount_order(mounts: Sequence[Mount]) -> list[Mount]:
    """Shallow mount paths first, so a volume inside another lands inside it (runc's order)."""
    return sorted(mounts, key=lambda m: m.target.count("/") if m.target != "/" else 0)


def covered(paths: Iterable[str], shadows: Iterable[str]) -> list[str]:
    """The paths a shadow (a mount path, the private /tmp) would hide, outermost only."""
    tops = [s.rstrip("/") or "/" for s in shadows]
    hidden = sorted(
        {
            os.path.normpath(p)
            for p in paths
            if any(os.path.normpath(p).startswith(t.rstrip("/") + "/") for t in tops)
        }
    )
    outermost: list[str] = []
    for path in hidden:
        if not any(path.startswith(kept + "/") for kept in outermost):
            outermost.append(path)
    return outermost


def mirrored_directories(paths: Iterable[str], private: Iterable[str]) -> set[str]:
    """The host directories the root mirrors entry by entry instead of binding them whole: every
    directory on the way to a path the container must make (a mount path, its working dir),
    symlinks resolved as the root will resolve them since it mirrors the host, up to where a
    private area (a volume's mount path, `/tmp`) takes over."""
    shadows = [os.path.realpath(s) for s in private]
    mirrored: set[str] = set()
    for path in paths:
        for ancestor in Path(os.path.realpath(path)).parents:
            parent = str(ancestor)
            if parent != "/" and not any(_is_under(parent, s) for s in shadows):
                mirrored.add(parent)
    return mirrored


def installation_paths(command: list[str]) -> list[str]:
    """What the container's command needs from this machine: the interpreter, its packages, the
    import path and the command's own directory."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]
    found = shutil.which(command[0]) if command else None
    if found:
        paths.append(str(Path(found).parent))
    return [p for p in paths if p and Path(p).is_dir()]


def _bind(source: str, target: str, *, read_only: bool) -> None:
    _mount(source, target, MS_BIND | MS_REC)
    if read_only:
        _mount("none", target, MS_REMOUNT | MS_BIND | MS_RDONLY)


def _make_mount_point(path: Path, *, directory: bool) -> None:
    if directory:
        path.mkdir(parents=True, exist_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.touch()


def mirror(host: str, into: str, mirrored: set[str], targets: set[str]) -> None:
    """Fill `into` with the entries of the host directory `host` (see the module's doc)."""
    for entry in sorted(os.scandir(host), key=lambda e: e.name):
        path, copy = entry.path, Path(into) / entry.name
        if path == PRIVATE_TMP:
            copy.mkdir(mode=0o777)
            copy.chmod(0o1777)  # sticky, as every /tmp
        elif path in KERNEL_VIEWS:
            copy.mkdir()
            _bind(path, str(copy), read_only=KERNEL_VIEWS[path])
        elif path in targets:
            # Covered by a volume: an empty mount point, whatever the host has there.
            continue
        elif entry.is_symlink():
            copy.symlink_to(Path(path).readlink())
        elif entry.is_dir(follow_symlinks=False) and path in mirrored:
            info = entry.stat(follow_symlinks=False)
            copy.mkdir()
            copy.chmod(stat.S_IMODE(info.st_mode))
            os.chown(copy, info.st_uid, info.st_gid)
            mirror(path, str(copy), mirrored, targets)
        elif entry.is_dir(follow_symlinks=False):
            copy.mkdir()
            _bind(path, str(copy), read_only=True)
        else:
            copy.touch()
            _bind(path, str(copy), read_only=True)


def enter_root(mounts: Sequence[Mount], keep: Sequence[str] = (), workdir: str = "") -> None:
    """Build the container's root in this (private) mount namespace, chroot into it and mount
    the volumes there. Call it once, in a fresh mount namespace."""
    ordered = mount_order(mounts)
    handles = [os.open(m.source, O_PATH) for m in ordered]
    kinds = [Path(m.source).is_dir() for m in ordered]
    hidden = covered(keep, [PRIVATE_TMP, *(m.target for m in ordered)])
    kept = [(path, os.open(path, O_PATH)) for path in hidden]
    targets = {os.path.realpath(m.target) for m in ordered}
    made = [*(m.target for m in ordered), *([workdir] if workdir else [])]
    mirrored = mirrored_directories(made, [PRIVATE_TMP, *(m.target for m in ordered)])
    _mount("tmpfs", STAGING, 0, "tmpfs")
    Path(ROOT).mkdir()
    _mount("tmpfs", ROOT, 0, "tmpfs")
    Path(ROOT).chmod(0o755)
    mirror("/", ROOT, mirrored, targets)
    os.chroot(ROOT)
    os.chdir("/")
    # /dev is read-only; shared memory is the container's own.
    if Path(SHARED_MEMORY).is_dir():
        _mount("tmpfs", SHARED_MEMORY, 0, "tmpfs")
    for mount, handle, is_dir in zip(ordered, handles, kinds, strict=True):
        _make_mount_point(Path(mount.target), directory=is_dir)
        _bind(f"/proc/self/fd/{handle}", mount.target, read_only=mount.read_only)
    for path, handle in kept:
        _make_mount_point(Path(path), directory=True)
        _bind(f"/proc/self/fd/{handle}", path, read_only=True)
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
    try:
        enter_root(mounts, installation_paths(command), workdir)
    except OSError as err:
        print(f"container root: {err}", file=sys.stderr)  # noqa: T201
        raise SystemExit(128) from err
    if hostname:
        socket.sethostname(hostname)  # in the container's own UTS namespace
    if workdir:
        try:
            Path(workdir).mkdir(parents=True, exist_ok=True)
            os.chdir(workdir)
        except OSError as err:
            print(f"working dir {workdir}: {err.strerror}", file=sys.stderr)  # noqa: T201
            raise SystemExit(128) from err
    try:
        os.execvp(command[0], command)  # noqa: S606 - the container's own command
    except OSError as err:
        print(f"exec {command[0]}: {err.strerror}", file=sys.stderr)  # noqa: T201
        raise SystemExit(127) from err


if __name__ == "__main__":
    main(sys.argv[1:])
