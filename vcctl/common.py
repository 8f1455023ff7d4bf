"""Options and error reporting shared by the CLI's commands."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from shared.cli import require_kubeconfig
from vcctl.api import ApiError, VolcanoApi, connect

# A failure (the API refused, the object is not there) exits 1; a usage problem (a missing name,
# a bad flag value or file) exits 2, as every `vcjob` command. vcctl's 255 (`os.Exit(-1)`) tells
# neither apart and reads as "-1" in shells.
FAILURE_EXIT: Final = 1
USAGE_EXIT: Final = 2
DEFAULT_KUBECONFIG: Final = Path.home() / ".kube" / "config"
F = TypeVar("F", bound=Callable[..., Any])


class UsageError(Exception):
    """A usage problem the command reports in vcctl's words (a missing name, a bad action)."""


class RefusedError(Exception):
    """A request that cannot do anything for the object as it is (suspending a finished job):
    refused before anything is created, and reported as a failure (exit 1)."""


def connection_options(func: F) -> F:
    """`--master/-s` and `--kubeconfig/-k`, on every leaf command as in vcctl."""
    func = click.option(
        "-k",
        "--kubeconfig",
        type=click.Path(dir_okay=False),
        help="Kubeconfig file (default: KUBECONFIG, then ~/.kube/config).",
    )(func)
    func = click.option(
        "-s", "--master", default=None, help="The address of the Kubernetes API server."
    )(func)
    return func


# The flags that name a job, a JobFlow or a JobTemplate besides the NAME argument (a Queue's is
# `--name/-n`, as vcctl's).
NAME_FLAGS = "--name/-N"


def namespace_option(func: F) -> F:
    """`-n/--namespace`, as vcctl's job and flow commands take it."""
    return click.option(
        "-n",
        "--namespace",
        default=None,
        help="Namespace (default: the kubeconfig context's namespace, else `default`).",
    )(func)


def name_argument(func: F) -> F:
    """The object's name as a plain argument, `vcjob job view NAME`, besides vcctl's flag."""
    return click.argument("name_argument", metavar="[NAME]", required=False, default="")(func)


def one_name(argument: str, flag: str, flags: str) -> str:
    """The name given as NAME or with its flag (`flags`, e.g. `--name/-N`), never both."""
    if argument and flag:
        raise UsageError(
            f"the name is given twice, as NAME ({argument}) and with {flags} ({flag}): give it once"
        )
    return argument or flag


def output_option(*choices: str) -> Callable[[F], F]:
    return click.option(
        "-o", "--output", type=click.Choice(list(choices)), default=None, help="Output format."
    )


def reported(leaf: str, parent: str) -> Callable[[F], F]:
    """Turn ApiError, RefusedError, UsageError and ValueError into `Failed to <leaf> <parent>:
    <why>` on stderr: one line, never a traceback; exit code 1 for a failure, 2 for a usage
    problem."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except (ApiError, RefusedError) as exc:
                click.echo(f"Failed to {leaf} {parent}: {exc}", err=True)
                raise SystemExit(FAILURE_EXIT) from None
            except (UsageError, ValueError) as exc:
                click.echo(f"Failed to {leaf} {parent}: {exc}", err=True)
                raise SystemExit(USAGE_EXIT) from None

        return wrapper  # type: ignore[return-value]

    return decorate


def open_api(kubeconfig: str | None, master: str | None) -> VolcanoApi:
    """Without --kubeconfig the loader reads KUBECONFIG (a list of files) or ~/.kube/config.
    A kubeconfig that cannot exist is a usage error (exit 2), as for every `vcjob` command."""
    if kubeconfig is not None or not (os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG.is_file()):
        require_kubeconfig(kubeconfig)
    return connect(kubeconfig, master)
