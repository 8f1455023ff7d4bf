"""The image recipe: it cannot be built on these machines (no container engine), so its promises
are checked as text: multi-stage, slim non-root runtime, `vcjob` entrypoint, a context that holds
every packaged module."""

from __future__ import annotations

import json
import re
import tomllib

from localcluster.tools import PROJECT_ROOT

DOCKERFILE = (PROJECT_ROOT / "Dockerfile").read_text()
INSTRUCTIONS = [
    line.strip()
    for line in re.sub(r"\\\n", " ", DOCKERFILE).splitlines()
    if line.strip() and not line.lstrip().startswith("#")
]


def stages() -> list[list[str]]:
    found: list[list[str]] = []
    for instruction in INSTRUCTIONS:
        if instruction.startswith("FROM "):
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def test_builds_a_wheel_in_a_builder_stage() -> None:
    builder, runtime = stages()
    assert builder[0].endswith(" AS builder")
    assert any("pip wheel" in step for step in builder)
    assert any("from=builder" in step and "--no-index" in step for step in runtime)


def test_runtime_is_slim_python_and_non_root() -> None:
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in INSTRUCTIONS
    runtime = stages()[-1]
    assert runtime[0] == "FROM ${PYTHON_IMAGE}"
    assert "USER 65532:65532" in runtime
    assert runtime[-2:] == ['ENTRYPOINT ["vcjob"]', 'CMD ["--help"]']
    assert json.loads(runtime[-2].removeprefix("ENTRYPOINT ")) == ["vcjob"]


def test_runtime_has_no_build_tools() -> None:
    runtime = " ".join(stages()[-1])
    for tool in ("apt-get install", "build-essential", "gcc", "hatchling"):
        assert tool not in runtime
    assert "pip uninstall --yes pip setuptools wheel" in runtime


def test_build_context_holds_every_packaged_module() -> None:
    packages = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["hatch"][
        "build"
    ]["targets"]["wheel"]["packages"]
    allowed = (PROJECT_ROOT / ".dockerignore").read_text().splitlines()
    assert allowed[allowed.index("*") + 1 :][:2] == ["!pyproject.toml", "!README.md"]
    for package in packages:
        assert f"!{package}/" in allowed, package
        assert f"COPY {package} ./{package}" in INSTRUCTIONS, package


def test_the_local_cluster_is_not_in_the_image() -> None:
    assert not any("localcluster" in step for step in INSTRUCTIONS)
    assert "!localcluster/" not in (PROJECT_ROOT / ".dockerignore").read_text().splitlines()
