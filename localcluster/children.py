"""The components of `vcjob local up` as supervised child processes: each with its log file,
stopped with its parent even when the parent is killed, terminated and waited for with a
deadline."""

from __future__ import annotations

import enum
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# `vcjob local up`'s lines all carry its logger's name, whichever module writes them.
log = logging.getLogger("localcluster.up")

MISSING_COMMAND_MARKERS = ("No such command", "ModuleNotFoundError", "ImportError")
PORT_TAKEN_MARKERS = ("Address already in use", "address already in use", "Errno 98")

# Run before a child's program (Linux): ask the kernel to send a signal when `up` dies, even by
# SIGKILL, so no component outlives it; then exec the real program. The flag survives execve.
PARENT_DEATH_SHIM = """
import ctypes, os, sys
PR_SET_PDEATHSIG = 1
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sys.argv[2]))
if os.getppid() != int(sys.argv[1]):
    sys.exit(0)
os.execv(sys.argv[3], sys.argv[3:])
"""


def with_parent_death_signal(
    argv: Sequence[str], death_signal: signal.Signals = signal.SIGTERM
) -> list[str]:
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [
        sys.executable, "-c", PARENT_DEATH_SHIM, str(os.getpid()), str(int(death_signal)), *argv
    ]  # fmt: skip


class Readiness(enum.Enum):
    READY = "ready"
    MISSING = "missing"
    PORT_TAKEN = "port taken"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def vcjob_command() -> list[str]:
    """How to run `vcjob` with this interpreter: the console script next to it when installed."""
    script = Path(sys.executable).with_name("vcjob")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from shared.cli import main; sys.exit(main())"]


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def process_alive(pid: int) -> bool:
    """Whether a process with this pid (not ours) still runs."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Child:
    """A supervised child process whose output goes to its own log file."""

    name: str
    argv: Sequence[str]
    log_path: Path
    port: int | None = None
    # What the kernel sends when `up` dies without stopping its children in order.
    death_signal: signal.Signals = signal.SIGTERM
    extra: dict[str, Any] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    _log: IO[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._log is None:
            self._log = self.log_path.open("ab")
        # A session of its own: a terminal's Ctrl-C reaches `up` only, which stops them in order.
        self.process = subprocess.Popen(
            with_parent_death_signal(self.argv, self.death_signal),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.info("component started", extra={"component": self.name, "pid": self.process.pid})

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def wait(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            log.warning(
                "component did not stop in time, killing it", extra={"component": self.name}
            )
            self.process.kill()
            self.process.wait(5)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def missing_command(self) -> bool:
        """Whether it exited because this vcjob build does not have the command yet."""
        tail = log_tail(self.log_path, 15)
        return any(marker in tail for marker in MISSING_COMMAND_MARKERS)

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"pid": self.pid, "log": str(self.log_path), **self.extra}
        if self.port is not None:
            described["port"] = self.port
        return described
