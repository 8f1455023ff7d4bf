"""The export lines a new user copies — the README's and the ones `vcjob local up` prints — put
`vcjob` and `kubectl vcjob` (and the pinned kubectl) on PATH in a shell that has nothing else."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from localcluster import banner
from localcluster.options import UpOptions

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools" / "bin"

needs_tools = pytest.mark.skipif(
    not (TOOLS / "kubectl").exists() or not (ROOT / ".venv" / "bin" / "vcjob").exists(),
    reason="needs `make install` and `make cluster` (the pinned kubectl)",
)


def readme_exports() -> list[str]:
    """The `export` lines of the README's "Using it" block, without their comments."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Using it", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line.split(" #", 1)[0].strip() for line in block.splitlines() if "export " in line]


def clean_shell(lines: list[str], check: str) -> subprocess.CompletedProcess[str]:
    """`lines` then `check` in bash started with an empty environment, in the checkout."""
    script = "\n".join([*lines, check])
    return subprocess.run(
        ["/bin/bash", "--noprofile", "--norc", "-c", script],
        cwd=ROOT,
        env={"HOME": str(ROOT / ".test-tmp"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )


FINDS_BOTH = """
set -e
command -v vcjob
command -v kubectl
kubectl vcjob --help >/dev/null
kubectl plugin list 2>/dev/null | grep -q kubectl-vcjob
"""


@needs_tools
def test_the_readme_lines_put_vcjob_and_kubectl_vcjob_on_path() -> None:
    lines = readme_exports()
    assert any(line.startswith("export PATH=") for line in lines), lines
    assert clean_shell([], "command -v vcjob").returncode != 0  # the shell alone has neither
    result = clean_shell(lines, FINDS_BOTH)
    assert result.returncode == 0, result.stderr
    vcjob, kubectl = result.stdout.split()[:2]
    assert Path(vcjob) == ROOT / ".venv" / "bin" / "vcjob"
    assert Path(kubectl) == TOOLS / "kubectl"


@needs_tools
def test_the_banner_line_puts_vcjob_and_kubectl_vcjob_on_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    [line] = banner.path_export_lines()
    export = line.split(" #", 1)[0].strip()
    assert re.fullmatch(r"export PATH=\S+:\$PATH", export), export
    result = clean_shell([export], FINDS_BOTH)
    assert result.returncode == 0, result.stderr
    # Once PATH finds all of them, the banner says nothing.
    monkeypatch.setenv("PATH", export.removeprefix("export PATH=").replace("$PATH", "/usr/bin"))
    assert banner.path_export_lines() == []


def test_the_readme_and_the_banner_keep_kubectls_cache_out_of_home(tmp_path: Path) -> None:
    """kubectl writes its discovery and HTTP cache to ~/.kube/cache unless KUBECACHEDIR says
    otherwise: the lines a user copies keep it beside the cluster."""
    assert "export KUBECACHEDIR=$PWD/.vcjob/kube-cache" in readme_exports()
    options = UpOptions(dir=tmp_path / "cluster")
    exports = [
        line.split(" #", 1)[0].strip()
        for line in banner.render(options, 6443, {}).splitlines()
        if "export " in line
    ]
    assert f"export KUBECONFIG={tmp_path / 'cluster' / 'kubeconfig'}" in exports
    assert f"export KUBECACHEDIR={tmp_path / 'cluster' / 'kube-cache'}" in exports
