"""`make install` and `make demo` show what they do (a first run takes minutes), and install the
local cluster's own distribution beside vcjob; `make demo` installs only what the demo runs, the
dev tools come with `make install` and `make test`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

MAKEFILE_PATH = Path(__file__).resolve().parents[2] / "Makefile"
MAKEFILE = MAKEFILE_PATH.read_text()
DEV_GROUP = "--group dev"
RUNTIME_INSTALL = "-e . -e packages/vcjob-localcluster"


def recipe(target: str) -> list[str]:
    lines = MAKEFILE.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        body.append(line.strip())
    return body


def test_install_shows_progress_and_installs_both_distributions() -> None:
    runtime, dev = recipe("$(RUNTIME_STAMP)"), recipe("$(STAMP)")
    for steps in (runtime, dev):
        assert not [s for s in steps if "--quiet" in s or " -q " in s]
        assert steps[0].startswith('@echo "==> ')
    assert any(RUNTIME_INSTALL in s for s in runtime)
    assert not any(DEV_GROUP in s for s in runtime)
    assert any(DEV_GROUP in s for s in dev)
    # Two stamps: the runtime install does not count as the full one.
    assert runtime[-1] == "touch $(RUNTIME_STAMP)"
    assert dev[-1] == "touch $(STAMP)"


def test_demo_and_tools_announce_themselves() -> None:
    for target in ("demo", "tools", "cluster"):
        assert recipe(target)[0].startswith('@echo "==> '), target


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The Makefile beside the two pyproject files its install rules depend on, older than
    anything made later."""
    shutil.copy(MAKEFILE_PATH, tmp_path / "Makefile")
    for name in ("pyproject.toml", "packages/vcjob-localcluster/pyproject.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
        os.utime(tmp_path / name, (1_000_000, 1_000_000))
    return tmp_path


def dry_run(checkout: Path, target: str) -> list[str]:
    """The commands `make TARGET` would run there (`make -n`)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    result = subprocess.run(
        [make, "-n", "--no-print-directory", target],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.splitlines()


def made(checkout: Path, stamp: str) -> None:
    path = checkout / ".venv" / stamp
    path.parent.mkdir(exist_ok=True)
    path.touch()
    os.utime(path, (2_000_000, 2_000_000))


def test_demo_installs_the_runtime_packages_and_not_the_dev_group(checkout: Path) -> None:
    commands = dry_run(checkout, "demo")
    assert any(RUNTIME_INSTALL in c for c in commands), commands
    assert not any(DEV_GROUP in c for c in commands), commands


def test_test_after_demo_installs_the_dev_group_only(checkout: Path) -> None:
    made(checkout, ".installed-runtime")
    assert not any("pip install" in c for c in dry_run(checkout, "demo"))
    commands = dry_run(checkout, "test")
    assert any(DEV_GROUP in c for c in commands), commands
    assert not any(RUNTIME_INSTALL in c for c in commands), commands


def test_a_changed_pyproject_reinstalls_both(checkout: Path) -> None:
    made(checkout, ".installed-runtime")
    made(checkout, ".installed")
    assert not any("pip install" in c for c in dry_run(checkout, "install"))
    os.utime(checkout / "pyproject.toml", (3_000_000, 3_000_000))
    commands = dry_run(checkout, "install")
    assert any(RUNTIME_INSTALL in c for c in commands), commands
    assert any(DEV_GROUP in c for c in commands), commands
