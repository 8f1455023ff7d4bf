"""The job and queue commands against a fake API: what they send and what they print."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from shared.cli import kubectl_group, main
from vcctl import jobs, queues


class FakeApi:
    namespace = "team"

    def __init__(self) -> None:
        self.created: list[tuple[str, dict[str, Any]]] = []
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []
        self.queues: list[dict[str, Any]] = []
        self.asked: list[str] = []
        self.deleted: list[str] = []
        # The phase every job is in (empty: never reconciled).
        self.phase = ""

    def close(self) -> None:
        pass

    def create_job(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append((namespace, body))
        return body

    def get_job(self, namespace: str, name: str) -> dict[str, Any]:
        self.asked.append(name)
        return {
            "metadata": {"name": name, "namespace": namespace, "uid": "u"},
            "status": {"state": {"phase": self.phase}},
        }

    def delete_job(self, namespace: str, name: str) -> None:
        self.deleted.append(name)

    def get_queue(self, name: str) -> dict[str, Any]:
        self.asked.append(name)
        return {"metadata": {"name": name, "uid": "qu"}}

    def create_queue(self, body: dict[str, Any]) -> dict[str, Any]:
        self.queues.append(body)
        return {**body, "metadata": {**body["metadata"], "uid": "new-uid"}}

    def delete_queue(self, name: str) -> None:
        self.deleted.append(name)

    def list_podgroups(self) -> list[dict[str, Any]]:
        return []

    def list_events(self, namespace: str) -> list[dict[str, Any]]:
        return []

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


@pytest.mark.parametrize(
    "argv",
    [
        ["job", "view", "train"],
        ["job", "suspend", "train"],
        ["job", "resume", "train"],
        ["job", "delete", "train"],
        ["job", "view", "-n", "ml", "train", "-o", "json"],
        ["suspend", "train"],
        ["job", "view", "-N", "train"],
    ],
)
def test_every_job_command_takes_the_name_as_an_argument(api: FakeApi, argv: list[str]) -> None:
    api.phase = "Aborted" if "resume" in argv else "Running"
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert (api.asked + api.deleted)[0] == "train"


def test_run_takes_the_name_as_an_argument(api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["job", "run", "hello", "-r", "2"])
    assert result.exit_code == 0, result.output
    ((_, body),) = api.created
    assert body["metadata"]["name"] == "hello"


@pytest.mark.parametrize(
    "argv",
    [
        ["queue", "get", "q"],
        ["queue", "delete", "q"],
        ["queue", "operate", "q", "-a", "close"],
        ["queue", "operate", "-n", "q", "-a", "close"],
    ],
)
def test_every_queue_command_takes_the_name_as_an_argument(api: FakeApi, argv: list[str]) -> None:
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert (api.asked + api.deleted)[0] == "q"


@pytest.mark.parametrize(
    ("phase", "why"),
    [
        ("Completed", "job ml/train is Completed: a finished job cannot be suspended"),
        ("Failed", "job ml/train is Failed: a finished job cannot be suspended"),
        ("Terminated", "job ml/train is Terminated: a finished job cannot be suspended"),
        ("Completing", "job ml/train is Completing: a finishing job cannot be suspended"),
        ("Aborted", "job ml/train is Aborted: it is already suspended"),
    ],
)
def test_suspending_a_job_that_cannot_be_suspended_is_refused(
    api: FakeApi, phase: str, why: str
) -> None:
    api.phase = phase
    result = CliRunner().invoke(main, ["job", "suspend", "train", "-n", "ml"])
    assert result.exit_code == 1
    assert result.output == f"Failed to suspend job: {why}\n"
    assert api.commands == []


@pytest.mark.parametrize(
    ("phase", "why"),
    [
        ("Running", "job ml/train is Running: only a suspended (Aborting or Aborted) job can"),
        ("Completed", "job ml/train is Completed: a finished job cannot be resumed"),
    ],
)
def test_resuming_a_job_that_is_not_suspended_is_refused(
    api: FakeApi, phase: str, why: str
) -> None:
    api.phase = phase
    result = CliRunner().invoke(main, ["resume", "train", "-n", "ml"])
    assert result.exit_code == 1
    assert result.output.startswith(f"Failed to resume job: {why}")
    assert api.commands == []


@pytest.mark.parametrize(("phase", "action"), [("", "AbortJob"), ("Restarting", "AbortJob")])
def test_a_job_not_reconciled_yet_or_restarting_can_be_suspended(
    api: FakeApi, phase: str, action: str
) -> None:
    api.phase = phase
    result = CliRunner().invoke(main, ["job", "suspend", "train"])
    assert result.exit_code == 0, result.output
    assert [c["action"] for _, c in api.commands] == [action]


def test_queue_create_closed_closes_the_new_queue(api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["queue", "create", "q", "-S", "closed"])
    assert result.exit_code == 0, result.output
    ((namespace, command),) = api.commands
    assert (namespace, command["action"], command["target"]["uid"]) == (
        "default",
        "CloseQueue",
        "new-uid",
    )
    lines = result.output.splitlines()
    assert lines[0] == "create queue q successfully"
    assert lines[1].startswith("command.bus.volcano.sh/q-closequeue-")


def test_queue_create_open_issues_no_command_and_keeps_vcctls_default_name(
    api: FakeApi,
) -> None:
    result = CliRunner().invoke(main, ["queue", "create"])
    assert result.exit_code == 0, result.output
    assert [q["metadata"]["name"] for q in api.queues] == ["test"]
    assert api.commands == []


def test_queue_create_refuses_an_unknown_state(api: FakeApi) -> None:
    result = CliRunner().invoke(main, ["queue", "create", "q", "-S", "Closing"])
    assert result.exit_code == 2
    assert "Invalid value for '-S' / '--state': 'Closing' is not one of" in result.output
    assert api.queues == []


def test_the_kubectl_plugin_lists_only_the_user_commands() -> None:
    result = CliRunner().invoke(kubectl_group, ["--help"], prog_name="kubectl vcjob")
    assert result.exit_code == 0, result.output
    commands = result.output.split("Commands:\n")[1].split()
    listed = [word for word in commands if word.islower() and word.isalpha()]
    assert {"job", "queue", "suspend", "resume"} <= set(listed)
    assert not {"controller", "webhook", "local", "crds", "certs"} & set(listed)
    assert result.output.startswith("Usage: kubectl vcjob ")


def test_the_kubectl_plugin_sends_server_commands_to_vcjob() -> None:
    result = CliRunner().invoke(kubectl_group, ["controller", "--help"])
    assert result.exit_code == 2
    assert "run `vcjob controller`" in result.output


def test_vcjob_itself_still_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    commands = result.output.split("Commands:\n")[1]
    for name in ("controller", "webhook", "crds", "job", "queue"):
        assert f"  {name} " in commands
