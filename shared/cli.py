"""The `vcjob` command. Subcommands are registered by each package as `vcjob.commands` entry points
and loaded only when invoked, so this leaf package never imports the processes it dispatches to."""

from __future__ import annotations

import ipaddress
from importlib.metadata import entry_points
from pathlib import Path

import click

from shared import certgen, crdgen, names

ENTRY_POINT_GROUP = "vcjob.commands"


class PluginGroup(click.Group):
    """A click group whose extra subcommands come from entry points, loaded lazily."""

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
