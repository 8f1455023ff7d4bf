"""Every process of the local cluster writes `shared.logging`'s format, and only that: the API
server as well (it follows `--log-format`), no plain lines, uvicorn's lifecycle lines once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localcluster.testing import LOG_DIR, running_cluster

pytestmark = pytest.mark.slow

# TextFormatter: `<RFC 3339 UTC> <LEVEL padded> <logger>: <message>[ key=value…]`
TEXT_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 (DEBUG|INFO|WARNING|ERROR|CRITICAL) +\S+: "
)


def wait_for_line(path: Path, needle: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        if needle in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{path.name} has no {needle!r} after {timeout:.0f}s")


def test_every_component_log_is_in_the_text_format(tmp_path: Path) -> None:
    with running_cluster(tmp_path, simulator=False, webhook=True, controller=True) as cluster:
        logs = cluster.dir / LOG_DIR
        wait_for_line(logs / "controller.log", "controller health port")
        wait_for_line(logs / "webhook.log", "Uvicorn running on")
        wait_for_line(logs / "apiserver.log", "API server listening")
        time.sleep(1.0)  # let the startup lines of every server land
        texts = {p.name: p.read_text(errors="replace") for p in sorted(logs.glob("*.log"))}
    assert {"apiserver.log", "controller.log", "webhook.log"} <= set(texts)
    for name, text in texts.items():
        stray = [line for line in text.splitlines() if line and not TEXT_LINE.match(line)]
        assert stray == [], f"{name}: lines not in the text format"
        assert text.count("Started server process") <= 1, name


def test_the_api_server_writes_shared_json_lines(tmp_path: Path) -> None:
    log = tmp_path / "apiserver.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "localcluster.apiserver", "--port", "0", "--dir", str(tmp_path)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        text = wait_for_line(log, "API server listening", timeout=30.0)
    finally:
        process.terminate()
        process.wait(timeout=10)
    entries = [json.loads(line) for line in text.splitlines() if line]
    (listening,) = [e for e in entries if e["msg"] == "API server listening"]
    assert listening["logger"] == "localcluster.apiserver.server"
    assert listening["level"] == "info"
    assert listening["ts"].endswith("+00:00")
    assert listening["kubeconfig"] == str(tmp_path / "kubeconfig")
