"""The job and queue commands against a fake API: what they send and what they print."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from shared.cli import main
from vcctl import jobs, queues


class FakeApi:
    namespace = "team"

    def __init__(self) -> None:
        self.created: list[tuple[str, dict[str, Any]]] = []
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []

    def close(self) -> None:
        pass

    def create_job(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append((namespace, body))
        return body

    def get_job(self, namespace: str, name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": namespace, "uid": "u"}}

    def get_queue(self, name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "uid": "qu"}}

    def create_command(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        self.commands.append((namespace, body))
        return body

    def patch_queue(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.patched.append((name, patch))
        return {}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    fake = FakeApi()
    monkeypatch.setattr(jobs, "open_api", lambda *_: fake)
    monkeypatch.setattr(queues, "open_api", lambda *_: fake)
    return fake


def test_run_from_flags_uses_the_context_namespace(api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["job", "run", "-N", "hello", "-r", "3", "-i", "nginx"])
    assert result.exit_code == 0, result.output
    assert result.output == "run job hello successfully\n"
    ((namespace, body),) = api.created
    assert namespace == "team"
    assert body["spec"]["tasks"][0]["replicas"] == 3
    assert body["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] == "nginx"


def test_run_from_a_file_goes_to_the_namespace_flag(api: FakeApi, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text("kind: Job\nmetadata: {name: f, namespace: elsewhere}\nspec: {}\n")
    result = CliRunner().invoke(main, ["job", "run", "-f", str(manifest), "-n", "ml"])
    assert result.exit_code == 0, result.output
    ((namespace, body),) = api.created
    assert (namespace, body["metadata"]["namespace"]) == ("ml", "ml")


def test_run_refuses_a_file_that_is_not_yaml(api: FakeApi, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["job", "run", "-f", str(tmp_path / "job.json")])
    assert result.exit_code == 2  # a usage problem
    assert "only support yaml file" in result.output
    assert api.created == []


def test_suspend_creates_an_abort_command_for_the_job(api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["job", "suspend", "-N", "train", "-n", "ml"])
    assert result.exit_code == 0, result.output
    ((namespace, command),) = api.commands
    assert (namespace, command["action"], command["target"]["name"]) == ("ml", "AbortJob", "train")


def test_queue_operate_close_and_update(api: FakeApi) -> None:
    closed = CliRunner().invoke(main, ["queue", "operate", "--name", "q", "--action", "close"])
    assert closed.exit_code == 0, closed.output
    ((namespace, command),) = api.commands
    assert (namespace, command["action"], command["target"]["kind"]) == (
        "default",
        "CloseQueue",
        "Queue",
    )
    updated = CliRunner().invoke(main, ["queue", "operate", "-n", "q", "-a", "update", "-w", "4"])
    assert updated.exit_code == 0, updated.output
    assert api.patched == [("q", {"spec": {"weight": 4}})]
