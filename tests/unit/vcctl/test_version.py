"""`vcjob version`: vcctl's lines from the installed distribution's metadata."""

from __future__ import annotations

import json
from importlib import metadata

import pytest
from click.testing import CliRunner

from shared.cli import main
from vcctl.version import VersionInfo, git_sha, version_lines

SHA = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"


@pytest.mark.parametrize(
    ("version", "direct_url", "sha"),
    [
        ("0.1.0", None, "unknown"),
        ("0.1.0", json.dumps({"url": "file:///src", "dir_info": {"editable": True}}), "unknown"),
        ("0.1.0", json.dumps({"url": "https://x/vcjob.git", "vcs_info": {"vcs": "git",
                                                                       "commit_id": SHA}}), SHA),
        ("0.2.dev3+g1a2b3c4", None, "1a2b3c4"),
        ("0.2.dev3+g1a2b3c4.d20260101", None, "1a2b3c4"),
        ("0.2+local.build", None, "unknown"),
        ("0.1.0", "not json", "unknown"),
    ],
    ids=["no record", "editable", "vcs install", "scm label", "scm label, dirty", "other label",
         "broken record"],
)  # fmt: skip
def test_git_sha_comes_only_from_the_metadata(
    version: str, direct_url: str | None, sha: str
) -> None:
    assert git_sha(version, direct_url) == sha


def test_version_lines_have_vcctls_shape() -> None:
    info = VersionInfo("0.1.0", "unknown", "unknown", "CPython 3.12.1", "linux/x86_64")
    assert version_lines(info) == [
        "API Version: v1alpha1",
        "Version: 0.1.0",
        "Git SHA: unknown",
        "Built At: unknown",
        "Python Version: CPython 3.12.1",
        "Python OS/Arch: linux/x86_64",
    ]


def test_the_command_prints_the_installed_version() -> None:
    result = CliRunner().invoke(main, ["version"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == f"Version: {metadata.version('vcjob')}"
    assert [line.split(":")[0] for line in lines] == [
        "API Version", "Version", "Git SHA", "Built At", "Python Version", "Python OS/Arch",
    ]  # fmt: skip
