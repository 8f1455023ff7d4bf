"""`make demo` end to end: a job completes and an invalid one is denied by the webhook, and the
demo writes nothing into HOME (kubectl's cache stays in the demo's folder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from localcluster.running import tools_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_demo_runs_a_job_to_completion_and_shows_a_denial(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # HOME is the only place left for per-user files: no XDG folders, no kubectl cache named.
    env = {
        name: value
        for name, value in tools_env().items()
        if name != "KUBECACHEDIR" and not name.startswith("XDG_")
    }
    env["HOME"] = str(home)
    result = subprocess.run(
        [sys.executable, "-m", "localcluster.demo", "--dir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=420,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "condition met" in result.stdout
    assert 'admission webhook "validatejob.vcjob.volcano.sh" denied the request' in result.stdout
    assert "demo finished" in result.stdout
    assert sorted(home.rglob("*")) == []
    # kubectl's discovery cache is in the demo's folder instead of ~/.kube/cache.
    assert any((tmp_path / "demo" / "kube-cache").rglob("*.json"))
