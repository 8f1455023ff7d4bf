"""Two `vcjob local up` started together on one folder: one runs, the other stops at once with a
clear error and leaves the first one's kubeconfig and certificates alone."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from localcluster.clusterdir import KUBECONFIG_FILE, STATE_FILE
from localcluster.running import tools_env, vcjob_executable
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_two_ups_started_together_on_one_folder(tmp_path: Path) -> None:
    argv = [*vcjob_executable(), "local", "up", "--port", "0", "--dir", str(tmp_path),
            "--no-simulator", "--no-controller", "--log-format", "text"]  # fmt: skip
    procs = [
        subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=tools_env()
        )
        for _ in range(2)
    ]
    try:
        loser = wait_until(
            "one of the two ups refused",
            lambda: next((p for p in procs if p.poll() is not None), None),
            30,
            interval=0.05,
        )
        winner = next(p for p in procs if p is not loser)
        _, err = loser.communicate(timeout=10)
        assert loser.returncode == 1
        assert f"a local cluster is already running from {tmp_path}" in err
        assert len(err.strip().splitlines()) == 1, err
        state_file = tmp_path / STATE_FILE

        def first_up_ready() -> bool:
            assert winner.poll() is None, winner.communicate()
            return state_file.exists() and bool(json.loads(state_file.read_text()).get("ready"))

        wait_until("the first up ready", first_up_ready, 90, interval=0.1)
        assert json.loads(state_file.read_text())["pid"] == winner.pid
        ready = subprocess.run(
            ["kubectl", "--kubeconfig", str(tmp_path / KUBECONFIG_FILE), "get", "--raw",
             "/readyz"],
            capture_output=True, text=True, env=tools_env(), timeout=30, check=False,
        )  # fmt: skip
        assert ready.returncode == 0, ready.stderr
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
