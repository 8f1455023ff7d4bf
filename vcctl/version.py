"""`vcjob version` (vcctl version): vcjob's version, read from the installed distribution's
metadata, in the lines vcctl prints; Python's version and platform where vcctl prints Go's."""

from __future__ import annotations

import json
import platform
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Final

import click

from shared.labels import BATCH_VERSION

DISTRIBUTION: Final = "vcjob"
UNKNOWN: Final = "unknown"
# A version's local label that names a commit, as setuptools-scm and hatch-vcs write it
# (`0.2.dev3+g1a2b3c4`, `0.2.dev3+g1a2b3c4.d20260101`).
_COMMIT_LABEL: Final = re.compile(r"\+g([0-9a-f]{7,40})(?:\.|$)")


@dataclass(frozen=True)
class VersionInfo:
    version: str
    git_sha: str
    built_at: str
    python_version: str
    os_arch: str


def git_sha(version: str, direct_url: str | None) -> str:
    """The commit the distribution was installed from: pip's record of a VCS install
    (`direct_url.json`, PEP 610), else a commit in the version's local label; else unknown."""
    if direct_url:
        try:
            recorded = json.loads(direct_url)
        except ValueError:
            recorded = {}
        commit = (recorded.get("vcs_info") or {}).get("commit_id") if recorded else None
        if isinstance(commit, str) and commit:
            return commit
    found = _COMMIT_LABEL.search(version)
    return found.group(1) if found else UNKNOWN


def version_lines(info: VersionInfo) -> list[str]:
    """vcctl's six lines, `API Version` being the batch.volcano.sh API version vcjob serves."""
    return [
        f"API Version: {BATCH_VERSION}",
        f"Version: {info.version}",
        f"Git SHA: {info.git_sha}",
        f"Built At: {info.built_at}",
        f"Python Version: {info.python_version}",
        f"Python OS/Arch: {info.os_arch}",
    ]


def installed() -> VersionInfo:
    """What the installed `vcjob` distribution and this interpreter say. The metadata holds no
    build time, so Built At is unknown."""
    try:
        distribution = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version, sha = UNKNOWN, UNKNOWN
    else:
        version = distribution.version
        sha = git_sha(version, distribution.read_text("direct_url.json"))
    return VersionInfo(
        version=version,
        git_sha=sha,
        built_at=UNKNOWN,
        python_version=f"{platform.python_implementation()} {platform.python_version()}",
        os_arch=f"{sys.platform}/{platform.machine() or UNKNOWN}",
    )


@click.command("version", context_settings={"help_option_names": ["-h", "--help"]})
def version_command() -> None:
    """Print the version information."""
    for line in version_lines(installed()):
        click.echo(line)
