"""`vcjob local …`: the local control plane's commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from localcluster import multikueue
from localcluster.bootstrap import DEFAULT_CRDS_DIR
from localcluster.clusterdir import KUBECONFIG_FILE
from localcluster.options import UpOptions
from localcluster.simulator.images import parse_image_mapping
from localcluster.simulator.nodes import NodeShape
from localcluster.up import LocalControlPlane
from shared import quantity
from shared.duration import parse_duration
from shared.featuregates import parse_feature_gates
from shared.logging import LOG_FORMAT_CHOICES, configure_logging


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err
    return value


def _positive_duration(ctx: click.Context, param: click.Parameter, value: str) -> str:
    _duration(ctx, param, value)
    if parse_duration(value).total_seconds() <= 0:
        raise click.BadParameter(f"{value!r} must be longer than 0s (e.g. 30s)")
    return value


def _optional_positive_duration(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> str | None:
    return None if value is None else _positive_duration(ctx, param, value)


def _multikueue_worker(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[multikueue.Worker, ...]:
    try:
        workers = tuple(multikueue.parse_worker(text) for text in value)
        multikueue.check_workers(workers)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err
    return workers


def _crds_dir(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    if value != DEFAULT_CRDS_DIR and not value.is_dir():
        raise click.BadParameter(
            f"{value} is not a folder; give a folder of CRD YAML files or leave the option out"
        )
    return value


def _quantity(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if quantity.try_parse(value) is None:
        raise click.BadParameter(f'"{value}" is not a resource quantity (such as 8, 500m, 32Gi)')
    return value


def _run_image(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    for mapping in value:
        try:
            parse_image_mapping(mapping)
        except ValueError as err:
            raise click.BadParameter(str(err)) from err
    return value


def _feature_gates(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Checked here, passed on to the webhook as written."""
    try:
        parse_feature_gates(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err
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
@click.option(
    "--no-simulator", is_flag=True, help="Do not start the node agent (no nodes, pods stay Pending)"
)
@click.option("--no-controller", is_flag=True, help="Do not start the vcjob controller.")
@click.option(
    "--kueue",
    is_flag=True,
    help="Also install Kueue's CRDs and run its manager (built by `make kueue`), with vcjob's "
    "Job among its external frameworks (docs/kueue.md).",
)
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
    help="Number of nodes the node agent runs (node-1 … node-N).",
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
    help="Put a proxy between vcjob's webhook and controller and kube-apiserver that fails this "
    "share of their requests on purpose (500, 429 with Retry-After, 409, timeouts) and cuts "
    "their watches.",
)
@click.option(
    "--fault-seed",
    type=int,
    default=None,
    help="Seed of the fault injection, so a run's sequence of faults can be replayed.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep etcd's data in this folder, so a restart finds every object again (default: a "
    "fresh etcd under DIR each time).",
)
@click.option(
    "--elastic-period",
    default="30s",
    show_default=True,
    callback=_positive_duration,
    help="Period of the controller's elastic autoscaler (more than 0s).",
)
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMAT_CHOICES),
    default="auto",
    show_default=True,
    help="Log format of every component: auto (text on a terminal, JSON lines in the log files), "
    "json or text.",
)
@click.option(
    "--crds-dir",
    default=DEFAULT_CRDS_DIR,
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    callback=_crds_dir,
    help="Folder of CustomResourceDefinition YAML files to apply (default: the chart's; "
    "without a chart on disk, vcjob's generated CRDs).",
)
@click.option(
    "--bare",
    is_flag=True,
    help="A fresh cluster for `helm install`: the control plane and the node agent (with its "
    "process runtime) only; no CRDs, vcjob-system, Queue, webhook or controller: a plain "
    "cluster to `helm install vcjob charts/vcjob` into.",
)
@click.option(
    "--audit-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="kube-apiserver's audit log: one audit.k8s.io/v1 Event per request, JSON lines "
    "(Metadata level).",
)
@click.option(
    "--run-image",
    "run_images",
    multiple=True,
    metavar="REPOSITORY=COMMAND",
    callback=_run_image,
    help="Run pods whose image is REPOSITORY as real processes, COMMAND being the image's "
    "entrypoint (repeatable). The chart's image always maps to this installation's `vcjob`.",
)
@click.option(
    "--feature-gates",
    default="",
    callback=_feature_gates,
    metavar="NAME=true,…",
    help="Volcano's alpha features for the webhook (and its /pods/mutate hook): "
    "SchedulingGatesQueueAdmission. The node agent lifts Volcano's queue gate as Volcano's "
    "scheduler does with the gate on.",
)
@click.option(
    "--external-gang-scheduler",
    is_flag=True,
    help="Leave gang scheduling (PodGroup admission, binding the `volcano` scheduler's pods) to a "
    "scheduler started apart, such as Volcano's vc-scheduler; the node agent then only runs the "
    "pods bound to its nodes (kube-scheduler still places default-scheduler pods).",
)
@click.option(
    "--multikueue-worker",
    "multikueue_workers",
    multiple=True,
    metavar="NAME=DIR",
    callback=_multikueue_worker,
    help="Make this cluster Kueue's MultiKueue manager (implies --kueue) with the local cluster "
    "running from DIR (`vcjob local up --dir DIR --kueue`) as the worker cluster NAME "
    "(repeatable; docs/multikueue.md).",
)
@click.option(
    "--multikueue-worker-lost-timeout",
    default=None,
    callback=_optional_positive_duration,
    metavar="DURATION",
    help="How long MultiKueue waits for a worker that stopped answering before it dispatches "
    "the worker's Jobs again (Kueue's workerLostTimeout; Kueue's default: 15m).",
)
def up_command(
    port: int,
    directory: Path,
    no_simulator: bool,
    no_controller: bool,
    kueue: bool,
    no_webhook: bool,
    nodes: int,
    node_cpu: str,
    node_memory: str,
    node_gpu: int,
    pod_runtime: str,
    fault_rate: float,
    fault_seed: int | None,
    data_dir: Path | None,
    elastic_period: str,
    log_format: str,
    crds_dir: Path,
    bare: bool,
    audit_log: Path | None,
    run_images: tuple[str, ...],
    feature_gates: str,
    external_gang_scheduler: bool,
    multikueue_workers: tuple[multikueue.Worker, ...],
    multikueue_worker_lost_timeout: str | None,
) -> None:
    """Start the local cluster in the foreground; Ctrl-C or SIGTERM stops it.

    etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built by `make cluster`),
    then vcjob's webhook, controller and node agent. The kubeconfig is written to DIR/kubeconfig
    as soon as kube-apiserver answers; the ports, pids and log files of every component are in
    DIR/local.json once everything is ready.
    """
    if bare and multikueue_workers:
        raise click.UsageError(
            "--bare starts no Kueue: a MultiKueue manager (--multikueue-worker) needs one"
        )
    configure_logging(fmt=log_format)
    options = UpOptions(
        dir=directory,
        port=port,
        simulator=not no_simulator,
        controller=not (no_controller or bare),
        kueue=(kueue or bool(multikueue_workers)) and not bare,
        webhook=not (no_webhook or bare),
        nodes=nodes,
        node_shape=NodeShape(cpu=node_cpu, memory=node_memory, gpu=node_gpu),
        pod_runtime=pod_runtime,
        fault_rate=fault_rate,
        fault_seed=fault_seed,
        data_dir=data_dir,
        elastic_period=elastic_period,
        log_format=log_format,
        crds_dir=crds_dir,
        bare=bare,
        audit_log=audit_log,
        run_images=run_images,
        feature_gates=feature_gates,
        external_gang_scheduler=external_gang_scheduler,
        multikueue_workers=multikueue_workers,
        multikueue_worker_lost_timeout=multikueue_worker_lost_timeout,
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
