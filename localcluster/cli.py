"""`vcjob local …`: the local control plane's commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from localcluster.simulator.nodes import NodeShape
from localcluster.up import DEFAULT_CRDS_DIR, KUBECONFIG_FILE, LocalControlPlane, UpOptions
from shared import quantity
from shared.duration import parse_duration
from shared.logging import LOG_FORMATS, configure_logging


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err
    return value


def _quantity(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if quantity.try_parse(value) is None:
        raise click.BadParameter(f'"{value}" is not a resource quantity (such as 8, 500m, 32Gi)')
    return value


@click.group("local", context_settings={"help_option_names": ["-h", "--help"]})
def local_group() -> None:
    """The local control plane: an API server, the webhook, the controller and a pod/node simulator
    on this machine, for development, demos and tests (not for production)."""


@local_group.command("up", short_help="Start the local control plane (foreground).")
@click.option(
    "--port",
    default=6443,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="HTTPS port of the API server on 127.0.0.1 (0: any free port, recorded in local.json).",
)
@click.option(
    "--dir",
    "directory",
    default=Path(".vcjob"),
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the kubeconfig, webhook certificates, logs and local.json.",
)
@click.option("--no-simulator", is_flag=True, help="Do not start the pod/node simulator.")
@click.option("--no-controller", is_flag=True, help="Do not start the vcjob controller.")
@click.option(
    "--no-webhook",
    is_flag=True,
    help="Do not start the admission webhook (and remove its configurations).",
)
@click.option(
    "--nodes",
    default=3,
    show_default=True,
    type=click.IntRange(0, 1000),
    help="Number of simulated nodes (node-1 … node-N).",
)
@click.option(
    "--node-cpu",
    default="8",
    show_default=True,
    callback=_quantity,
    help="CPU capacity of each node.",
)
@click.option(
    "--node-memory",
    default="32Gi",
    show_default=True,
    callback=_quantity,
    help="Memory capacity of each node.",
)
@click.option(
    "--node-gpu",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="nvidia.com/gpu capacity of each node (0: the resource is not advertised).",
)
@click.option(
    "--pod-runtime",
    default="5s",
    show_default=True,
    callback=_duration,
    help="How long a simulated pod runs unless its sim.vcjob.io/runtime annotation says otherwise.",
)
@click.option(
    "--fault-rate",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0.0, 1.0),
    help="Share of API requests the server fails on purpose (500, 409 or a timeout).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Persist the API server's objects in SQLite in this folder (default: in memory).",
)
@click.option(
    "--elastic-period",
    default="30s",
    show_default=True,
    callback=_duration,
    help="Period of the controller's elastic autoscaler.",
)
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="json",
    show_default=True,
    help="Log format of every component.",
)
@click.option(
    "--crds-dir",
    default=DEFAULT_CRDS_DIR,
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of CustomResourceDefinition YAML files to apply.",
)
def up_command(
    port: int,
    directory: Path,
    no_simulator: bool,
    no_controller: bool,
    no_webhook: bool,
    nodes: int,
    node_cpu: str,
    node_memory: str,
    node_gpu: int,
    pod_runtime: str,
    fault_rate: float,
    data_dir: Path | None,
    elastic_period: str,
    log_format: str,
    crds_dir: Path,
) -> None:
    """Start the local control plane in the foreground; Ctrl-C or SIGTERM stops it.

    The kubeconfig is written to DIR/kubeconfig as soon as the API server answers; the ports, pids
    and log files of every component are in DIR/local.json once everything is ready.
    """
    configure_logging(fmt=log_format)
    options = UpOptions(
        dir=directory,
        port=port,
        simulator=not no_simulator,
        controller=not no_controller,
        webhook=not no_webhook,
        nodes=nodes,
        node_shape=NodeShape(cpu=node_cpu, memory=node_memory, gpu=node_gpu),
        pod_runtime=pod_runtime,
        fault_rate=fault_rate,
        data_dir=data_dir,
        elastic_period=elastic_period,
        log_format=log_format,
        crds_dir=crds_dir,
    )
    sys.exit(LocalControlPlane(options).run())


@local_group.command("kubeconfig", short_help="Print the kubeconfig path.")
@click.option(
    "--dir",
    "directory",
    default=Path(".vcjob"),
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder given to `vcjob local up --dir`.",
)
def kubeconfig_command(directory: Path) -> None:
    """Print the path of the local cluster's kubeconfig."""
    path = directory / KUBECONFIG_FILE
    if not path.is_file():
        raise click.ClickException(
            f"no kubeconfig at {path}: "
            f"start the local cluster with `vcjob local up --dir {directory}`"
        )
    click.echo(str(path.resolve()))
