"""The `go` commands of `make cluster` and `make kueue` keep Go's telemetry counters in the
checkout while reading the user's own `go env -w` settings."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from localcluster import kubebin
from localcluster.kubebin import GO_CONFIG_HOME, go_env
from localcluster.tools import PROJECT_ROOT


def test_the_config_folder_moves_into_the_checkout_and_goenv_stays_the_users() -> None:
    env = go_env({"HOME": "/home/u", "PATH": "/bin"})
    assert env["XDG_CONFIG_HOME"] == str(GO_CONFIG_HOME)
    assert GO_CONFIG_HOME.is_relative_to(PROJECT_ROOT)
    assert env["GOENV"] == "/home/u/.config/go/env"
    assert (env["CGO_ENABLED"], env["GOTOOLCHAIN"], env["PATH"]) == ("0", "local", "/bin")


@pytest.mark.parametrize(
    ("environ", "goenv"),
    [
        ({"HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg"}, "/cfg/go/env"),
        ({"HOME": "/home/u", "GOENV": "/etc/goenv"}, "/etc/goenv"),
        ({"HOME": "/home/u", "GOENV": "off"}, "off"),
    ],
)
def test_goenv_is_where_go_would_have_looked(environ: dict[str, str], goenv: str) -> None:
    assert go_env(environ)["GOENV"] == goenv


def test_go_reads_it_so_and_writes_nothing_in_home(tmp_path: Path) -> None:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).exists():
        pytest.skip("Go is not installed")
    home = tmp_path / "home"
    (home / ".config" / "go").mkdir(parents=True)
    goenv_file = home / ".config" / "go" / "env"
    goenv_file.write_text("GOPROXY=https://proxy.example\n")
    answer = subprocess.run(
        [go, "env", "GOTELEMETRYDIR", "GOPROXY"],
        env=go_env({"HOME": str(home), "PATH": "/usr/bin:/bin"}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert answer.stdout.split() == [
        str(GO_CONFIG_HOME / "go" / "telemetry"),
        "https://proxy.example",
    ]
    assert sorted(home.rglob("*")) == [home / ".config", home / ".config" / "go", goenv_file]


def test_a_release_module_replaces_every_staging_module() -> None:
    kubernetes_go_mod = (
        "module k8s.io/kubernetes\n\nreplace (\n"
        "\tk8s.io/api => ./staging/src/k8s.io/api\n"
        "\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n"
        "\tgithub.com/other/thing => github.com/fork/thing v1.0.0\n)\n"
    )
    staging = kubebin.staging_modules(kubernetes_go_mod)
    assert staging == ["k8s.io/api", "k8s.io/client-go"]
    written = kubebin.release_go_mod("v1.35.4", staging)
    assert "require k8s.io/kubernetes v1.35.4\n" in written
    assert "\tk8s.io/api => k8s.io/api v0.35.4\n" in written
    assert "\tk8s.io/client-go => k8s.io/client-go v0.35.4\n" in written
    assert "\tk8s.io/kubernetes/cmd/kubectl\n" in written
