"""The real Kubernetes binaries `vcjob local up` runs: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kubectl, pinned by the Go module in `controlplane/`.

`python -m localcluster.kubebin` (`make cluster`) builds the missing ones once into the git-ignored
`.tools/bin`, with progress shown; binaries of the pinned version already on PATH or in
`KUBEBUILDER_ASSETS` (the layout setup-envtest writes) are used instead. Go's build and module
caches stay where Go keeps them, outside the checkout; Go's telemetry counters, which it keeps in
the user's config folder, go to `.tools/go-config` instead (`go_env`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import click

from localcluster.tools import PROJECT_ROOT, TOOLS_BIN, release_dir

GO_MODULE_DIR = PROJECT_ROOT / "controlplane"
PINNED_KUBERNETES_VERSION = "v1.37.2"
ETCD_VERSION = "3.6.16"
# The manual lane of docs/kubernetes-versions.md (VCJOB_KUBERNETES_VERSION): another release's
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl, built from a module written
# into its own folder; etcd stays the pinned one.
RELEASE_DIR = release_dir()
KUBERNETES_VERSION = (
    RELEASE_DIR.name.removeprefix("k8s-") if RELEASE_DIR is not None else PINNED_KUBERNETES_VERSION
)
KUBERNETES_MODULE_DIR = RELEASE_DIR / "module" if RELEASE_DIR is not None else GO_MODULE_DIR
KUBERNETES_BIN = RELEASE_DIR / "bin" if RELEASE_DIR is not None else TOOLS_BIN
ASSETS_ENV = "KUBEBUILDER_ASSETS"
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
# A fixed build date keeps builds of the same version byte-identical.
BUILD_DATE = "2026-01-01T00:00:00Z"
# The config folder (XDG_CONFIG_HOME) of the `go` commands: where Go writes its telemetry counters.
GO_CONFIG_HOME = PROJECT_ROOT / ".tools" / "go-config"


@dataclass(frozen=True)
class Component:
    name: str
    package: str
    version: str
    # The Go module that pins it: etcd has its own, since Kubernetes' module requires a newer
    # etcd library than the server release vcjob runs.
    module_dir: Path = GO_MODULE_DIR
    bin_dir: Path = TOOLS_BIN


COMPONENTS: tuple[Component, ...] = (
    Component("etcd", "go.etcd.io/etcd/server/v3", ETCD_VERSION, GO_MODULE_DIR / "etcd"),
    *(
        Component(
            name,
            f"k8s.io/kubernetes/cmd/{name}",
            KUBERNETES_VERSION,
            KUBERNETES_MODULE_DIR,
            KUBERNETES_BIN,
        )
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
    ),
)
BY_NAME = {c.name: c for c in COMPONENTS}


class BuildError(click.ClickException):
    """A binary could not be found or built; the message says which and why."""


def version_flags(component: Component) -> list[str]:
    """The arguments that make the binary print its version."""
    if component.name == "kubectl":
        return ["version", "--client"]
    return ["--version"]


def reported_version(output: str) -> str | None:
    """The version a binary printed: `Kubernetes v1.37.2`, `Client Version: v1.37.2`,
    `etcd Version: 3.6.16`."""
    match = re.search(r"(?:Kubernetes|Client Version:|etcd Version:)\s+v?(\d+\.\d+\.\d+)", output)
    return match.group(1) if match else None


def version_matches(component: Component, output: str) -> bool:
    return reported_version(output) == component.version.removeprefix("v")


def ldflags(version: str) -> str:
    """Stamp the version so `kubectl version` reports it (as the release build does)."""
    major, minor, _ = version.removeprefix("v").split(".")
    flags = ["-s", "-w"]
    for package in VERSION_PACKAGES:
        flags += [
            f"-X {package}.gitVersion={version}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
            f"-X {package}.buildDate={BUILD_DATE}",
        ]
    return " ".join(flags)


def candidates(name: str, environ: Mapping[str, str]) -> list[Path]:
    """Where a binary may already be, in order: its folder under `.tools`, KUBEBUILDER_ASSETS,
    PATH."""
    found = [BY_NAME[name].bin_dir / name]
    assets = environ.get(ASSETS_ENV)
    if assets:
        found.append(Path(assets) / name)
    for folder in environ.get("PATH", "").split(os.pathsep):
        if folder and Path(folder).resolve() != BY_NAME[name].bin_dir.resolve():
            found.append(Path(folder) / name)
    return found


def _prints_version(path: Path, component: Component) -> bool:
    if not (path.is_file() and os.access(path, os.X_OK)):
        return False
    try:
        answer = subprocess.run(
            [str(path), *version_flags(component)],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return version_matches(component, answer.stdout + answer.stderr)


def find(name: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """The binary of the pinned version, wherever it already is, or None."""
    component = BY_NAME[name]
    for path in candidates(name, os.environ if environ is None else environ):
        if _prints_version(path, component):
            return path
    return None


def go_command() -> str:
    found = shutil.which("go") or next(
        (p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if Path(p).exists()), None
    )
    if found is None:
        raise BuildError(
            "Go (1.24 or newer) is needed to build the Kubernetes control plane once; "
            "install it, or put etcd, kube-apiserver, kube-controller-manager, kube-scheduler "
            f"and kubectl {KUBERNETES_VERSION} on PATH or in {ASSETS_ENV}"
        )
    return found


def go_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of a `go` command: a static build of the pinned modules with the local
    toolchain. Every `go` command writes telemetry counters under the user's config folder
    (`~/.config/go/telemetry`); they go to GO_CONFIG_HOME, while GOENV keeps naming the user's
    own `go env -w` settings (GOPROXY, say) where Go would look for them."""
    config_home = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "")) / ".config")
    return {
        **environ,
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-mod=readonly",
        "GOENV": environ.get("GOENV") or str(Path(config_home) / "go" / "env"),
        "XDG_CONFIG_HOME": str(GO_CONFIG_HOME),
    }


def build(components: Iterable[Component], echo: Callable[[str], None]) -> None:
    """`go build` the components into their folders, one `go build` per component (each main
    package needs its own output name), sharing Go's build cache."""
    go = go_command()
    env = go_env(os.environ)
    for component in components:
        if not (component.module_dir / "go.mod").is_file():
            prepare_release_module(component, env, echo)
        component.bin_dir.mkdir(parents=True, exist_ok=True)
        echo(
            f"building {component.name} {component.version} from {component.package} "
            "(the first build downloads modules and takes a few minutes)"
        )
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="vcjob-build-", dir=component.bin_dir) as scratch:
            output = Path(scratch) / component.name
            argv = [
                go, "build", "-v", "-trimpath",
                "-ldflags", ldflags(component.version),
                "-o", str(output), component.package,
            ]  # fmt: skip
            _run_with_progress(argv, env, echo, component.name, cwd=component.module_dir)
            output.replace(component.bin_dir / component.name)
        echo(f"built {component.bin_dir / component.name} in {time.monotonic() - started:.0f}s")


def staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The `k8s.io/*` modules k8s.io/kubernetes replaces with its own staging folders."""
    return re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", kubernetes_go_mod, re.M)


def release_go_mod(version: str, staging: Iterable[str]) -> str:
    """The go.mod of another release's control plane: k8s.io/kubernetes at `version`, each
    staging module at the matching v0 release (`v1.35.4` → `v0.35.4`)."""
    v0 = "v0." + version.removeprefix("v").split(".", 1)[1]
    replaces = "".join(f"\t{module} => {module} {v0}\n" for module in staging)
    tools = "".join(
        f"\tk8s.io/kubernetes/cmd/{name}\n"
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
    )
    return (
        f"// Kubernetes {version} for vcjob's manual lane (docs/kubernetes-versions.md),\n"
        "// written by localcluster.kubebin.\n"
        "module vcjob.io/controlplane-release\n\n"
        "go 1.26.0\n\n"
        f"require k8s.io/kubernetes {version}\n\n"
        f"replace (\n{replaces})\n\n"
        f"tool (\n{tools})\n"
    )


def prepare_release_module(
    component: Component, env: Mapping[str, str], echo: Callable[[str], None]
) -> None:
    """Write and tidy the module of a release other than the pinned one (it needs Go's module
    proxy, as `go get` does)."""
    go = go_command()
    echo(f"writing the Go module of Kubernetes {component.version} in {component.module_dir}")
    component.module_dir.mkdir(parents=True, exist_ok=True)
    module_env = {**env, "GOFLAGS": "-mod=mod"}
    downloaded = subprocess.run(
        [go, "mod", "download", "-json", f"k8s.io/kubernetes@{component.version}"],
        cwd=component.module_dir.parent,
        env=module_env,
        capture_output=True,
        text=True,
        check=False,
    )
    if downloaded.returncode != 0:
        raise BuildError(
            f"k8s.io/kubernetes {component.version}: {downloaded.stdout}{downloaded.stderr}"
        )
    go_mod_path = Path(json.loads(downloaded.stdout)["GoMod"])
    staging = staging_modules(go_mod_path.read_text())
    (component.module_dir / "go.mod").write_text(release_go_mod(component.version, staging))
    tidied = subprocess.run(
        [go, "mod", "tidy"],
        cwd=component.module_dir,
        env=module_env,
        capture_output=True,
        text=True,
        check=False,
    )
    if tidied.returncode != 0:
        (component.module_dir / "go.mod").unlink()
        raise BuildError(f"go mod tidy for Kubernetes {component.version}: {tidied.stderr}")


def _run_with_progress(
    argv: list[str],
    env: Mapping[str, str],
    echo: Callable[[str], None],
    what: str,
    cwd: Path = GO_MODULE_DIR,
) -> None:
    """Run `go build -v`, which names each package it compiles: show a count now and then."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    tail: list[str] = []
    last_report = time.monotonic()
    for compiled, line in enumerate(process.stdout or (), start=1):
        tail = [*tail[-20:], line.rstrip()]
        if time.monotonic() - last_report > 15:
            echo(f"  {what}: {compiled} packages compiled…")
            last_report = time.monotonic()
    if process.wait() != 0:
        detail = "\n".join(tail)
        raise BuildError(f"go build of {what} failed:\n{detail}")


def ensure(names: Iterable[str], echo: Callable[[str], None]) -> dict[str, Path]:
    """Each named binary of the pinned version: found where it already is, else built."""
    wanted = [BY_NAME[name] for name in names]
    found: dict[str, Path] = {}
    missing: list[Component] = []
    for component in wanted:
        path = find(component.name)
        if path is None:
            missing.append(component)
        else:
            found[component.name] = path
    if missing:
        build(missing, echo)
        for component in missing:
            path = find(component.name)
            if path is None:
                raise BuildError(f"{component.name} was built but does not report its version")
            found[component.name] = path
    return found


def require(name: str) -> Path:
    """The binary for `vcjob local up`; a clear error when it has not been built."""
    path = find(name)
    if path is None:
        raise BuildError(
            f"{name} {BY_NAME[name].version} is not built yet: run `make cluster` (or "
            f"`python -m localcluster.kubebin`), or put it on PATH or in {ASSETS_ENV}"
        )
    return path


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("names", nargs=-1)
def main(names: tuple[str, ...]) -> None:
    """Find or build the control plane's binaries (all of them by default)."""
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise click.BadParameter(
            f"unknown component {', '.join(unknown)}; known: {', '.join(BY_NAME)}",
            param_hint="NAMES",
        )
    for name, path in ensure(names or BY_NAME, lambda line: click.echo(line, err=True)).items():
        click.echo(f"{name}: {path}")


if __name__ == "__main__":
    sys.exit(main())
