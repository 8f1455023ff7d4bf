"""Kueue's manager for the end-to-end tests of vcjob's Kueue integration, pinned by the Go module
in `controlplane/kueue/` (sigs.k8s.io/kueue; its k8s.io/* modules are newer than the control
plane's, so it is a module of its own).

`python -m localcluster.kueuebin` (`make kueue`, run by `make test`) builds the manager once into
the git-ignored `.tools/bin` as `kueue-<version>` (only `cmd/kueue`, nothing else of Kueue); Go's
build and module caches stay where Go keeps them, outside the checkout. Kueue's CRDs and default
configuration are read from the same module in Go's module cache (`module_dir`), never copied
into this repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click

from localcluster.kubebin import BuildError, go_command, go_env
from localcluster.kubebin import _run_with_progress as run_with_progress
from localcluster.tools import PROJECT_ROOT, TOOLS_BIN

MODULE_DIR = PROJECT_ROOT / "controlplane" / "kueue"
MODULE = "sigs.k8s.io/kueue"
VERSION = "v0.17.0"
PACKAGE = f"{MODULE}/cmd/kueue"
BINARY = TOOLS_BIN / f"kueue-{VERSION}"
CRD_FOLDER = Path("config") / "components" / "crd" / "bases"


def _go_env() -> dict[str, str]:
    return go_env(os.environ)


def find() -> Path | None:
    """The built manager of the pinned version, or None."""
    return BINARY if BINARY.is_file() and os.access(BINARY, os.X_OK) else None


def build(echo: Callable[[str], None]) -> Path:
    """`go build` Kueue's manager (cmd/kueue only) into TOOLS_BIN."""
    go = go_command()
    TOOLS_BIN.mkdir(parents=True, exist_ok=True)
    echo(
        f"building Kueue's manager {VERSION} from {PACKAGE} "
        "(the first build downloads modules and takes several minutes)"
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vcjob-build-", dir=TOOLS_BIN) as scratch:
        output = Path(scratch) / BINARY.name
        flags = f"-s -w -X {MODULE}/pkg/version.GitVersion={VERSION}"
        argv = [go, "build", "-v", "-trimpath", "-ldflags", flags, "-o", str(output), PACKAGE]
        run_with_progress(argv, _go_env(), echo, "kueue", cwd=MODULE_DIR)
        output.replace(BINARY)
    echo(f"built {BINARY} in {time.monotonic() - started:.0f}s")
    return BINARY


def ensure(echo: Callable[[str], None]) -> Path:
    return find() or build(echo)


def require() -> Path:
    """The manager for a test; a clear error when it has not been built."""
    found = find()
    if found is None:
        raise BuildError(
            f"Kueue's manager {VERSION} is not built yet: run `make kueue` "
            "(or `python -m localcluster.kueuebin`)"
        )
    return found


def module_dir() -> Path:
    """Where Go's module cache holds sigs.k8s.io/kueue at the pinned version (downloaded first
    if needed): its CRDs and configuration are read from there."""
    answer = subprocess.run(
        [go_command(), "mod", "download", "-json", f"{MODULE}@{VERSION}"],
        cwd=MODULE_DIR,
        env=_go_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if answer.returncode != 0:
        raise BuildError(f"go mod download {MODULE}@{VERSION} failed:\n{answer.stderr[-2000:]}")
    folder = Path(json.loads(answer.stdout)["Dir"])
    if not (folder / CRD_FOLDER).is_dir():
        raise BuildError(f"{folder} holds no {CRD_FOLDER}: not Kueue's module?")
    return folder


def crd_files() -> list[Path]:
    """Kueue's CustomResourceDefinitions, from its module."""
    return sorted((module_dir() / CRD_FOLDER).glob("*.yaml"))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Find or build Kueue's manager."""
    path = ensure(lambda line: click.echo(line, err=True))
    click.echo(f"kueue: {path}")


if __name__ == "__main__":
    sys.exit(main())
