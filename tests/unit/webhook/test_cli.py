"""`vcjob webhook` flags: defaults, environment variables, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from webhook.cli import webhook_command


def params(args: list[str]) -> dict[str, object]:
    with webhook_command.make_context("webhook", args) as ctx:
        return dict(ctx.params)


def test_defaults() -> None:
    p = params([])
    assert (p["port"], p["health_port"], p["metrics_port"]) == (9443, 8081, 8080)
    assert (p["scheduler_name"], p["queue_check"], p["log_format"]) == ("volcano", "on", "auto")
    assert p["certs_mode"] == "files"


@pytest.mark.parametrize(
    ("env", "param", "value"),
    [
        ({"VCJOB_WEBHOOK_PORT": "10443"}, "port", 10443),
        ({"VCJOB_WEBHOOK_SCHEDULER_NAME": "kube-batch"}, "scheduler_name", "kube-batch"),
        ({"VCJOB_WEBHOOK_QUEUE_CHECK": "off"}, "queue_check", "off"),
        ({"VCJOB_WEBHOOK_LOG_FORMAT": "text"}, "log_format", "text"),
        ({"VCJOB_WEBHOOK_CERTS_MODE": "self"}, "certs_mode", "self"),
    ],
)
def test_every_flag_is_also_an_environment_variable(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], param: str, value: object
) -> None:
    for key, text in env.items():
        monkeypatch.setenv(key, text)
    assert params([])[param] == value


def test_tls_files_are_required_in_files_mode() -> None:
    result = CliRunner().invoke(webhook_command, ["--queue-check", "off"])
    assert result.exit_code == 2
    assert "--tls-cert-file and --tls-private-key-file are required" in result.output


def test_queue_check_needs_a_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    for name in ("tls.crt", "tls.key"):
        (tmp_path / name).write_text("")
    result = CliRunner().invoke(
        webhook_command,
        ["--tls-cert-file", str(tmp_path / "tls.crt"), "--tls-private-key-file",
         str(tmp_path / "tls.key")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "no kubeconfig and not running in a cluster: pass --kubeconfig" in result.output


def test_bad_values_are_refused() -> None:
    result = CliRunner().invoke(webhook_command, ["--queue-check", "maybe"])
    assert result.exit_code == 2
    assert "'maybe' is not one of 'on', 'off'" in result.output
