"""The `vcjob` command. Subcommands are registered by each package as `vcjob.commands` entry points
and loaded only when invoked, so this leaf package never imports the processes it dispatches to."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import click

from shared import certgen, crdgen, names

ENTRY_POINT_GROUP = "vcjob.commands"


# Commands that come with another distribution, and how to get it.
OPTIONAL_COMMANDS = {"local": "pip install 'vcjob[local]' (the vcjob-localcluster distribution)"}
# The commands for users of a cluster (vcctl's), the only ones `kubectl vcjob` offers; the others
# (webhook, controller, local, crds, certs) run or set up vcjob itself.
USER_COMMANDS = (
    "job",
    "queue",
    "jobflow",
    "jobtemplate",
    "pod",
    "suspend",
    "resume",
    "version",
)
KUBECTL_PLUGIN = "kubectl vcjob"


class UsageProblem(click.ClickException):
    """A usage error told in one line — what is wrong and what to do — with exit code 2."""

    exit_code = 2


def require_kubeconfig(kubeconfig: str | Path | None, *, in_cluster: bool = True) -> None:
    """Refuse up front a kubeconfig that cannot work: a path that is no file, or none at all
    outside a cluster (where the client would only say that a service host is not set)."""
    if kubeconfig is not None:
        path = Path(kubeconfig)
        if not path.is_file():
            raise UsageProblem(
                f"--kubeconfig {path}: no such file; pass the path of a kubeconfig "
                "(`vcjob local kubeconfig` prints the local cluster's)"
            )
        return
    if in_cluster and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return
    raise UsageProblem(
        "no kubeconfig and not running in a cluster: pass --kubeconfig PATH or set KUBECONFIG "
        "(`vcjob local kubeconfig` prints the local cluster's)"
    )


def require_free_ports(host: str, ports: Mapping[str, int]) -> None:
    """Refuse up front a listening port that is taken, naming its flag."""
    for flag, port in ports.items():
        if port == 0:
            continue
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as err:
                raise click.ClickException(
                    f"{flag} {port}: the port is in use on {host} ({err.strerror}); "
                    f"pass {flag} 0 for any free port, or stop what listens there"
                ) from None


def require_file(flag: str, path: Path | None) -> None:
    if path is not None and not path.is_file():
        raise UsageProblem(f"{flag} {path}: no such file; pass the path of an existing PEM file")


class PluginGroup(click.Group):
    """A click group whose extra subcommands come from entry points, loaded lazily. Its errors
    are one line each (`Error: what is wrong; what to do`), usage errors with exit code 2."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as err:
            hint = f" (see '{err.ctx.command_path} --help')" if err.ctx is not None else ""
            click.echo(f"Error: {err.format_message()}{hint}", err=True)
            sys.exit(err.exit_code)
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)

    def list_commands(self, ctx: click.Context) -> list[str]:
        commands = set(super().list_commands(ctx))
        commands.update(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
        return sorted(commands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        builtin = super().get_command(ctx, cmd_name)
        if builtin is not None:
            return builtin
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name == cmd_name:
                command = ep.load()
                if not isinstance(command, click.Command):
                    raise click.ClickException(f"entry point {ep.value} is not a click command")
                return command
        if cmd_name in OPTIONAL_COMMANDS:
            raise UsageProblem(
                f"`vcjob {cmd_name}` is not installed: {OPTIONAL_COMMANDS[cmd_name]}"
            )
        return None


class KubectlPluginGroup(PluginGroup):
    """`kubectl vcjob`: the user commands only; a server command is refused with where it is."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in super().list_commands(ctx) if name in USER_COMMANDS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in USER_COMMANDS:
            return super().get_command(ctx, cmd_name)
        if cmd_name in main.list_commands(ctx) or cmd_name in OPTIONAL_COMMANDS:
            raise UsageProblem(
                f"`{cmd_name}` runs or sets up vcjob itself, not a `{KUBECTL_PLUGIN}` "
                f"command: run `vcjob {cmd_name}`"
            )
        return None


def show_environment_variables(command: click.Command) -> click.Command:
    """List each option's environment variable in `--help` (`[env var: VCJOB_WEBHOOK_PORT]`);
    click shows the names its `auto_envvar_prefix` derives only when asked per option."""
    for param in command.params:
        if isinstance(param, click.Option):
            param.show_envvar = True
    return command


@click.group(cls=PluginGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vcjob")
def main() -> None:
    """vcjob: Volcano batch Jobs for Kubernetes (webhook, controller, local control plane)."""


@main.command("crds")
@click.option(
    "--write",
    "write_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write one file per CRD into this folder instead of printing them.",
)
def crds_command(write_dir: Path | None) -> None:
    """Print the CustomResourceDefinitions generated from the schema models."""
    if write_dir is None:
        click.echo(crdgen.render_all(), nl=False)
        return
    for path in crdgen.write_all(write_dir):
        click.echo(str(path))


def _certificate_hosts(
    ctx: click.Context, param: click.Parameter, hosts: tuple[str, ...]
) -> tuple[str, ...]:
    """Each host must be an IP address or a DNS name (a leading `*.` wildcard allowed)."""
    for host in hosts:
        try:
            ipaddress.ip_address(host)
            continue
        except ValueError:
            pass
        name = host.lower().removeprefix("*.")
        if problems := names.dns1123_subdomain(name):
            raise click.BadParameter(
                f"{host!r} is neither an IP address nor a DNS name: {'; '.join(problems)}"
            )
    return hosts


@main.command("certs")
@click.option(
    "--out-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write ca.crt, tls.crt and tls.key into (created if missing).",
)
@click.option(
    "--host",
    "hosts",
    multiple=True,
    required=True,
    callback=_certificate_hosts,
    help="A DNS name or IP address the serving certificate is valid for (repeatable).",
)
@click.option("--days", default=365, show_default=True, type=click.IntRange(min=1))
def certs_command(out_dir: Path, hosts: tuple[str, ...], days: int) -> None:
    """Write a CA and a serving certificate signed by it, for the given hosts."""
    bundle = certgen.issue(list(hosts), days=days)
    for path in certgen.write_bundle(bundle, out_dir):
        click.echo(str(path))


@click.group(cls=KubectlPluginGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vcjob")
def kubectl_group() -> None:
    """kubectl vcjob: run, list, view, explain, suspend, resume and delete Volcano Jobs, list
    their pods, and manage Queues, JobFlows and JobTemplates (vcctl's commands)."""


def kubectl_main() -> Any:
    """The `kubectl-vcjob` console script: kubectl runs it for `kubectl vcjob …`."""
    return kubectl_group.main(prog_name=KUBECTL_PLUGIN)
