"""A component's parent-death signal: when `vcjob local up` dies by SIGKILL, the kernel sends
each child the signal chosen for it, and the child's own program runs in the shim's place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.children import with_parent_death_signal
from tests.support import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")

# The component: ignores SIGTERM (as a process busy with a graceful stop would outlast it), says
# which signal ends it if it can, and waits.
COMPONENT = """
import signal, sys, time
from pathlib import Path
report = Path(sys.argv[1])
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, lambda *_: (report.write_text("SIGHUP"), sys.exit(0)))
report.write_text("running")
while True:
    time.sleep(1)
"""

# Stands in for `up`: starts the component through the shim, prints its pid, waits to be killed.
PARENT = """
import signal, subprocess, sys, time
from localcluster.children import with_parent_death_signal
from tests.support import wait_until
argv = with_parent_death_signal(
    [sys.executable, "-c", sys.argv[1], sys.argv[2]], signal.Signals(int(sys.argv[3]))
)
child = subprocess.Popen(argv)
print(child.pid, flush=True)
while True:
    time.sleep(1)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def component_pids() -> Iterator[list[int]]:
    """Components a failed test leaves behind are killed, not left on the host."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def kill_parent_of(
    tmp_path: Path, death_signal: signal.Signals, component_pids: list[int]
) -> tuple[int, Path]:
    report = tmp_path / "report"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, COMPONENT, str(report), str(int(death_signal))],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    component_pids.append(child_pid)
    wait_until(
        "the child to report it runs",
        lambda: report.exists() and report.read_text() == "running",
        30,
    )
    parent.kill()
    parent.wait(10)
    return child_pid, report


def test_the_shim_runs_the_component_in_its_place() -> None:
    argv = with_parent_death_signal(["/bin/true", "--flag"], signal.SIGKILL)
    assert argv[-2:] == ["/bin/true", "--flag"]
    assert str(int(signal.SIGKILL)) in argv


def test_a_component_given_sigkill_dies_with_its_parent_even_if_it_ignores_sigterm(
    tmp_path: Path, component_pids: list[int]
) -> None:
    child_pid, report = kill_parent_of(tmp_path, signal.SIGKILL, component_pids)
    wait_until("the child to be gone", lambda: not alive(child_pid), 30)
    assert report.read_text() == "running"


def test_a_component_gets_the_signal_chosen_for_it(
    tmp_path: Path, component_pids: list[int]
) -> None:
    child_pid, report = kill_parent_of(tmp_path, signal.SIGHUP, component_pids)
    wait_until("the child to report SIGHUP", lambda: report.read_text() == "SIGHUP", 30)
    wait_until("the child to be gone", lambda: not alive(child_pid), 30)
