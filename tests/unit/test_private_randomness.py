"""No project code draws from the global `random` generator. Watch-timeout and retry jitter runs
in background threads; drawing from the shared generator there moves the state that seeded code
relies on (Hypothesis, for one, fails a test whose strategy sees it move)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kubeio", "controller", "webhook", "localcluster", "controlplane", "vcctl", "shared")

# `random.Random(seed)` makes a private generator; every other `random.<name>(...)` call draws
# from (or reseeds) the shared one.
PRIVATE_CONSTRUCTORS = {"Random", "SystemRandom"}


def global_random_calls(source: str) -> list[str]:
    """`random.<name>` calls in `source` that use the module's shared generator."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "random"
            and node.func.attr not in PRIVATE_CONSTRUCTORS
        ):
            found.append(f"line {node.lineno}: random.{node.func.attr}")
    return found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import random\nrandom.randint(1, 2)\n", ["line 2: random.randint"]),
        ("import random\nr = random.Random()\nr.random()\n", []),
        ("import random\nrandom.seed(3)\n", ["line 2: random.seed"]),
    ],
)
def test_global_random_calls_are_found(source: str, expected: list[str]) -> None:
    assert global_random_calls(source) == expected


def test_no_project_module_uses_the_shared_generator() -> None:
    offenders = {
        str(path.relative_to(ROOT)): calls
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if (calls := global_random_calls(path.read_text()))
    }
    assert offenders == {}
