"""Every `vcjob` error is one line — what is wrong, what to do — and usage errors exit with 2.
Driven through the real entry point, as a user meets it."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

VCJOB = str(Path(sys.executable).with_name("vcjob"))


def vcjob(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}
    return subprocess.run(
        [VCJOB, *args], capture_output=True, text=True, timeout=60, env={**base, **(env or {})}
    )


def one_line_error(result: subprocess.CompletedProcess[str], code: int, *parts: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    for part in parts:
        assert part in lines[0], lines[0]


@pytest.mark.parametrize("command", [["suspend", "j"], ["resume", "j"], ["controller"]])
def test_no_kubeconfig_says_what_to_do(command: list[str]) -> None:
    one_line_error(vcjob(*command), 2, "no kubeconfig", "pass --kubeconfig", "KUBECONFIG")


@pytest.mark.parametrize("command", [["suspend", "j"], ["controller"]])
def test_a_missing_kubeconfig_file_is_named(command: list[str]) -> None:
    result = vcjob(*command, "--kubeconfig", "/nonexistent")
    one_line_error(result, 2, "--kubeconfig /nonexistent: no such file")


def test_elastic_period_0s_is_refused_up_front(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    result = vcjob("controller", "--kubeconfig", str(kubeconfig), "--elastic-period", "0s")
    one_line_error(result, 2, "--elastic-period", "longer than 0s")
    one_line_error(vcjob("local", "up", "--elastic-period", "0s"), 2, "longer than 0s")


def test_webhook_names_a_missing_certificate_file() -> None:
    result = vcjob(
        "webhook", "--queue-check", "off", "--tls-cert-file", "/missing",
        "--tls-private-key-file", "/missing.key",
    )  # fmt: skip
    one_line_error(result, 2, "--tls-cert-file /missing: no such file")


def test_a_port_in_use_suggests_port_0(tmp_path: Path) -> None:
    for name in ("tls.crt", "tls.key"):
        (tmp_path / name).write_text("")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = vcjob(
            "webhook", "--host", "127.0.0.1", "--queue-check", "off", "--port", str(port),
            "--tls-cert-file", str(tmp_path / "tls.crt"),
            "--tls-private-key-file", str(tmp_path / "tls.key"),
        )  # fmt: skip
    one_line_error(result, 1, f"--port {port}: the port is in use", "pass --port 0")


def test_usage_errors_are_one_line_with_a_help_hint() -> None:
    one_line_error(vcjob("controller", "--workers", "0"), 2, "(see 'vcjob controller --help')")
    one_line_error(vcjob("no-such-command"), 2, "No such command")


def test_local_without_its_distribution_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from click.testing import CliRunner

    from shared import cli

    monkeypatch.setattr(cli, "entry_points", lambda group: [])
    result = CliRunner().invoke(cli.main, ["local", "up"])
    assert result.exit_code == 2
    assert "pip install 'vcjob[local]'" in result.output
