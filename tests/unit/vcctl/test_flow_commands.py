"""The jobflow, jobtemplate and pod commands against a fake API: what they ask, what they print
and how they exit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from shared.cli import main
from vcctl import flowcommands, pods
from vcctl.api import ApiError


class FakeApi:
    namespace = "team"

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.created: list[tuple[str, str, str]] = []
        self.deleted: list[tuple[str, str, str]] = []
        self.pod_queries: list[tuple[str | None, str]] = []
        self.pods: list[dict[str, Any]] = []
        self.jobs: list[dict[str, Any]] = []

    def close(self) -> None:
        pass

    def create_flow_object(self, kind: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        if (kind, namespace, name) in self.objects:
            raise ApiError(f'{kind.lower()}s.flow.volcano.sh "{name}" already exists')
        self.objects[(kind, namespace, name)] = body
        self.created.append((kind, namespace, name))
        return body

    def delete_flow_object(self, kind: str, namespace: str, name: str) -> None:
        if self.objects.pop((kind, namespace, name), None) is None:
            raise ApiError(f'{kind.lower()} "{name}" not found in namespace "{namespace}"')
        self.deleted.append((kind, namespace, name))

    def get_flow_object(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        try:
            return self.objects[(kind, namespace, name)]
        except KeyError:
            raise ApiError(
                f'{kind.lower()} "{name}" not found in namespace "{namespace}"'
            ) from None

    def list_flow_objects(self, kind: str, namespace: str | None) -> list[dict[str, Any]]:
        return [
            o for (k, ns, _), o in self.objects.items() if k == kind and namespace in (None, ns)
        ]

    def list_pods(self, namespace: str | None, label_selector: str = "") -> list[dict[str, Any]]:
        self.pod_queries.append((namespace, label_selector))
        return self.pods

    def list_jobs(self, namespace: str | None) -> list[dict[str, Any]]:
        return self.jobs


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    fake = FakeApi()
    monkeypatch.setattr(flowcommands, "open_api", lambda *_: fake)
    monkeypatch.setattr(pods, "open_api", lambda *_: fake)
    return fake


def manifest(tmp_path: Path, *names: str, kind: str = "JobFlow") -> str:
    path = tmp_path / "objects.yaml"
    path.write_text(
        "---\n".join(f"kind: {kind}\nmetadata: {{name: {n}}}\nspec: {{}}\n" for n in names)
    )
    return str(path)


def test_create_goes_to_the_context_namespace_and_says_so_per_document(
    api: FakeApi, tmp_path: Path
) -> None:
    result = CliRunner().invoke(main, ["jobflow", "create", "-f", manifest(tmp_path, "a", "b")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["Created JobFlow: team/a", "Created JobFlow: team/b"]
    assert api.created == [("JobFlow", "team", "a"), ("JobFlow", "team", "b")]


def test_create_goes_on_after_a_failed_document_and_exits_1(api: FakeApi, tmp_path: Path) -> None:
    api.objects[("JobTemplate", "team", "a")] = {}
    path = manifest(tmp_path, "a", "b", kind="JobTemplate")
    result = CliRunner().invoke(main, ["jobtemplate", "create", "-f", path])
    assert result.exit_code == 1
    assert result.stdout == "Created JobTemplate: team/b\n"
    assert result.stderr == (
        'Failed to create JobTemplate: team/a: jobtemplates.flow.volcano.sh "a" already exists\n'
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["jobflow", "create"], "Failed to create jobflow: the YAML file containing the jobflow "
         "must be given with -f/--file"),
        (["jobflow", "create", "-f", "/nonexistent.yaml"], "Failed to create jobflow: cannot read "
         "/nonexistent.yaml: No such file or directory"),
        (["jobtemplate", "delete"], "Failed to delete jobtemplate: job template name must be "
         "specified (give NAME, --name/-N or -f FILE)"),
        (["jobflow", "delete", "a", "-N", "b"], "Failed to delete jobflow: the name is given "
         "twice"),
        (["jobflow", "get"], "Failed to get jobflow: name is mandatory to get the particular "
         "jobflow details"),
        (["jobtemplate", "get"], "Failed to get jobtemplate: name is mandatory to get the "
         "particular job template details"),
    ],
)  # fmt: skip
def test_usage_problems_exit_2_in_one_line(api: FakeApi, argv: list[str], message: str) -> None:
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1


def test_a_file_of_the_wrong_kind_creates_nothing(api: FakeApi, tmp_path: Path) -> None:
    path = manifest(tmp_path, "a", kind="JobTemplate")
    result = CliRunner().invoke(main, ["jobflow", "create", "-f", path])
    assert result.exit_code == 2
    assert "document 1 is a JobTemplate, not a JobFlow" in result.stderr
    assert api.created == []


def test_delete_by_name_flag_or_argument(api: FakeApi) -> None:
    api.objects[("JobFlow", "ml", "a")] = {}
    api.objects[("JobFlow", "team", "b")] = {}
    by_flag = CliRunner().invoke(main, ["jobflow", "delete", "-N", "a", "-n", "ml"])
    assert (by_flag.exit_code, by_flag.stdout) == (0, "Deleted JobFlow: ml/a\n")
    by_argument = CliRunner().invoke(main, ["jobflow", "delete", "b"])
    assert (by_argument.exit_code, by_argument.stdout) == (0, "Deleted JobFlow: team/b\n")
    missing = CliRunner().invoke(main, ["jobflow", "delete", "b"])
    assert (missing.exit_code, missing.stderr) == (
        1,
        'Failed to delete jobflow: jobflow "b" not found in namespace "team"\n',
    )


def test_delete_from_a_file_deletes_every_document(api: FakeApi, tmp_path: Path) -> None:
    api.objects[("JobFlow", "ml", "a")] = {}
    path = manifest(tmp_path, "a", "b")
    result = CliRunner().invoke(main, ["jobflow", "delete", "-f", path, "-n", "ml"])
    assert result.exit_code == 1  # b is not there
    assert result.stdout == "Deleted JobFlow: ml/a\n"
    assert result.stderr.startswith("Failed to delete JobFlow: ml/b: ")


def test_get_list_and_describe(api: FakeApi) -> None:
    api.objects[("JobFlow", "team", "a")] = {"metadata": {"name": "a", "namespace": "team"}}
    got = CliRunner().invoke(main, ["jobflow", "get", "a"])
    assert got.exit_code == 0, got.output
    assert got.stdout.splitlines()[1].split() == ["a", "team", "<unknown>"]
    listed = CliRunner().invoke(main, ["jobflow", "list", "-o", "json"])
    assert '"name": "a"' in listed.stdout
    described = CliRunner().invoke(main, ["jobflow", "describe"])
    assert described.stdout.startswith("metadata:\n  name: a\n")
    assert "kind: JobFlow" in described.stdout
    empty = CliRunner().invoke(main, ["jobtemplate", "list", "-n", "elsewhere"])
    assert empty.stdout == "No resources found\n"
    bad = CliRunner().invoke(main, ["jobflow", "describe", "a", "-o", "table"])
    assert bad.exit_code == 2


def test_pod_list_asks_for_the_pods_of_jobs(api: FakeApi) -> None:
    assert CliRunner().invoke(main, ["pod", "list"]).stdout == "No resources found\n"
    CliRunner().invoke(main, ["pod", "list", "-J", "train", "-n", "ml"])
    CliRunner().invoke(main, ["pod", "list", "--job", "train", "--all-namespaces"])
    assert api.pod_queries == [
        ("team", "volcano.sh/job-name"),
        ("ml", "volcano.sh/job-name=train"),
        (None, "volcano.sh/job-name=train"),
    ]


def test_pod_list_refuses_a_job_of_another_queue(api: FakeApi) -> None:
    api.jobs = [{"metadata": {"name": "train", "namespace": "team"}, "spec": {"queue": "a"}}]
    result = CliRunner().invoke(main, ["pod", "list", "-j", "train", "-q", "b"])
    assert (result.exit_code, result.stderr) == (
        1,
        "Failed to list pod: the input vcjob train does not match the queue b (it is in queue a)\n",
    )
