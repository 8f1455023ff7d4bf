"""`make install` and `make demo` show what they do (a first run takes minutes), and install the
local cluster's own distribution beside vcjob."""

from __future__ import annotations

from pathlib import Path

MAKEFILE = (Path(__file__).resolve().parents[2] / "Makefile").read_text()


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
    steps = recipe("$(STAMP)")
    assert not [s for s in steps if "--quiet" in s or " -q " in s]
    assert any(s.startswith("@echo") for s in steps)
    assert any("-e . -e packages/vcjob-localcluster" in s for s in steps)
    assert any("--group dev" in s for s in steps)


def test_demo_and_tools_announce_themselves() -> None:
    for target in ("demo", "tools", "cluster"):
        assert recipe(target)[0].startswith('@echo "==> '), target
