"""Plugins: registered ones only, each passing its descriptor's rule."""

from __future__ import annotations

import pytest

from tests.unit.webhook.job.rules.jobspecs import SPEC, found, spec, task
from webhook.job.rules.plugins import validate_plugins

SUPPORTED = (
    'supported values: "env", "svc", "ssh", "tensorflow", "pytorch", "mpi", "ray", "hcclrank"'
)


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        pytest.param({"svc": [], "env": [], "mpi": []}, [], id="ok"),
        pytest.param({"horovod": []}, [("spec.plugins[horovod]", SUPPORTED)], id="unknown"),
        pytest.param({"svc": ["--nope"]}, [], id="bad-arguments-are-warnings"),
        pytest.param(
            {"mpi": ["--master=boss"]},
            [
                (
                    "spec.plugins[mpi]",
                    'the mpi master task "boss" does not exist in spec.tasks '
                    "(set it with --master=<task>)",
                )
            ],
            id="descriptor-rule",
        ),
        pytest.param(
            {"pytorch": ["--port=0"]},
            [("spec.plugins[pytorch]", "--port must be between 1 and 65535")],
            id="port",
        ),
    ],
)
def test_validate_plugins(plugins: dict[str, list[str]], expected: list[tuple[str, str]]) -> None:
    the_spec = spec(task("master", 1), task("worker"), plugins=plugins)
    assert found(validate_plugins(the_spec, SPEC)) == expected
