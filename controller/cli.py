"""`vcjob controller`."""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, Literal, cast

import click

from controller.cronjob.shell import CronJobController
from controller.elastic.shell import ElasticLoop
from controller.gates import GateError, enabled, parse_gates
from controller.job.decide import foreignwriters
from controller.job.shell.runner import Controller
from controller.jobflow.shell.loop import JobFlowController
from controller.manager import Manager
from controller.queues.decide import DefaultQueueSpec
from controller.queues.shell import QueueController
from controller.settings import Settings
from controller.volcanometrics import QueueCollector
from controller.workloads.shell import CONTROLLER_NAME as PG_CONTROLLER
from controller.workloads.shell import PodGroupController
from kubeio.client import load_api_client
from kubeio.signals import install_stop_signals
from shared.cli import require_free_ports, require_kubeconfig, show_environment_variables
from shared.duration import parse_duration
from shared.logging import LOG_FORMAT_CHOICES, configure_logging, stderr_log_format

log = logging.getLogger("controller")

ENV_PREFIX = "VCJOB_CONTROLLER"


def scheduler_names(listed: str) -> frozenset[str]:
    """A comma-separated list of scheduler names."""
    return frozenset(name.strip() for name in listed.split(",") if name.strip())


class DurationParam(click.ParamType):  # type: ignore[type-arg]
    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(str(value)).total_seconds()
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = DurationParam()


@show_environment_variables
@click.command(
    "controller", context_settings={"auto_envvar_prefix": ENV_PREFIX, "show_default": True}
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    help="Kubeconfig file; in-cluster config when absent.",
)
@click.option(
    "--workers", type=click.IntRange(1, 256), default=4, help="Jobs reconciled in parallel."
)
@click.option(
    "--leader-elect/--no-leader-elect", default=True, help="Elect a leader through a Lease."
)
@click.option("--lease-namespace", default="vcjob-system", help="Namespace of the leader Lease.")
@click.option("--lease-name", default="vcjob-controller", help="Name of the leader Lease.")
@click.option(
    "--gang-schedulers", default="volcano", help="Comma-separated schedulers that admit PodGroups."
)
@click.option(
    "--native-gang-schedulers",
    default="default-scheduler",
    show_default=True,
    help="Comma-separated schedulers (kube-scheduler's profiles) whose jobs get Kubernetes' own "
    "gang: a scheduling.k8s.io/v1beta1 Workload and PodGroup, where the cluster serves them "
    "(Kubernetes 1.37, GenericWorkload). Empty: none.",
)
@click.option(
    "--controllers",
    default="*",
    help="Controllers to run, as Volcano's gates: '*' for all, '-pg-controller' to turn one "
    "off (pg-controller, queue-controller, cronjob-controller, jobflow-controller; the "
    "job-controller always runs).",
)
@click.option(
    "--create-default-queue/--no-create-default-queue",
    default=True,
    show_default=True,
    help="Create the `default` Queue when it is missing, as Volcano's scheduler does at start "
    "(the queue controller checks at start and every resync).",
)
@click.option(
    "--default-queue-weight",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="spec.weight of a `default` Queue the controller creates.",
)
@click.option(
    "--default-queue-reclaimable/--no-default-queue-reclaimable",
    default=True,
    show_default=True,
    help="spec.reclaimable of a `default` Queue the controller creates.",
)
@click.option(
    "--inherit-owner-annotations/--no-inherit-owner-annotations",
    default=True,
    help="PodGroups of plain workloads take their owner's volcano.sh/ annotations and "
    "group-min-member.",
)
@click.option(
    "--qps",
    type=click.FloatRange(min=0),
    default=50.0,
    help="API requests per second of each client: Kubernetes' resources, Volcano's, events "
    "(0 = unlimited).",
)
@click.option(
    "--burst", type=click.IntRange(min=1), default=100, help="API request burst of each client."
)
@click.option(
    "--resync-period",
    type=DURATION,
    default="30s",
    help=(
        "Look at every job this often: one whose inputs changed since its last reconcile is "
        "reconciled, a settled one at least every ten periods."
    ),
)
@click.option(
    "--event-batch-period",
    type=DURATION,
    default="500ms",
    help="How long a job waits before it is reconciled after a change to one of its pods or to "
    "its PodGroup's status (not its phase), so that the rest of the burst is handled in the same "
    "pass (0 = at once).",
)
@click.option(
    "--health-port",
    type=click.IntRange(0, 65535),
    default=8081,
    help="/healthz and /readyz port (0 = any free port).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=8080,
    help="/metrics port (0 = any free port).",
)
@click.option(
    "--bind-address",
    default="0.0.0.0",  # noqa: S104
    help="Address the health and metrics servers listen on.",
)
@click.option(
    "--disable-network-policy",
    is_flag=True,
    default=False,
    help="Do not create the svc plugin's NetworkPolicy.",
)
@click.option(
    "--ssh-key-type",
    type=click.Choice(["rsa", "ed25519"]),
    default="rsa",
    help="Key type of the ssh plugin.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="info",
)
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMAT_CHOICES),
    default="auto",
    show_default=True,
    help="Log format: auto (text when stderr is a terminal, JSON lines otherwise), json or text.",
)
@click.option(
    "--kueue/--no-kueue",
    default=True,
    help="Queue jobs labelled kueue.x-k8s.io/queue-name through Kueue's Workloads "
    "(--no-kueue: the controller never reads Kueue's API).",
)
@click.option(
    "--elastic/--no-elastic",
    default=True,
    help="Run the elastic autoscaler loop on the leader; it acts only on jobs with elastic tasks.",
)
@click.option("--elastic-period", type=DURATION, default="30s", help="Elastic autoscaler period.")
@click.option(
    "--elastic-dry-run",
    is_flag=True,
    default=False,
    help="Log elastic decisions without applying them.",
)
@click.option(
    "--elastic-max-step",
    type=click.IntRange(min=1),
    default=1,
    help="Replicas one task gives up per period when scaling down (scale-up fills idle capacity).",
)
@click.option(
    "--elastic-min-growth",
    type=click.FloatRange(min=0),
    default=0.0,
    help="A task grows only by at least this share of its replicas (or to its maximum): "
    "every resize restarts its workers. 0 hands out every idle instance.",
)
@click.option(
    "--elastic-resize-cooldown",
    type=DURATION,
    default="0s",
    help="A task resized less than this long ago is not grown again, and gives up replicas only "
    "when no other task can. 0s: off.",
)
@click.option(
    "--gpu-resource", default="nvidia.com/gpu", help="Extended resource name counted as GPUs."
)
@click.option(
    "--request-timeout",
    type=DURATION,
    default="10s",
    help=(
        "Timeout of one API request; a watch without an event (bookmarks included) for three "
        "times this, at least 150 s, is re-opened."
    ),
)
def controller_command(**options: Any) -> None:
    """Run the Job controller: watch Jobs, Pods, PodGroups and Commands and reconcile them."""
    require_kubeconfig(options["kubeconfig"])
    if options["elastic"] and options["elastic_period"] <= 0:
        raise click.BadParameter("must be longer than 0s (e.g. 30s)", param_hint="--elastic-period")
    require_free_ports(
        options["bind_address"],
        {"--health-port": options["health_port"], "--metrics-port": options["metrics_port"]},
    )
    try:
        gates = parse_gates(options["controllers"])
    except GateError as exc:
        raise click.BadParameter(str(exc), param_hint="--controllers") from exc
    gang_schedulers = scheduler_names(options["gang_schedulers"])
    native_gang_schedulers = scheduler_names(options["native_gang_schedulers"])
    if both := sorted(gang_schedulers & native_gang_schedulers):
        raise click.BadParameter(
            f"{', '.join(both)} is also in --gang-schedulers: a scheduler's pods are gang-"
            "scheduled by Volcano's PodGroup or by Kubernetes' own, not both",
            param_hint="--native-gang-schedulers",
        )
    settings = Settings(
        kubeconfig=options["kubeconfig"],
        controllers=gates,
        inherit_owner_annotations=options["inherit_owner_annotations"],
        default_queue=DefaultQueueSpec(
            weight=options["default_queue_weight"],
            reclaimable=options["default_queue_reclaimable"],
        )
        if options["create_default_queue"]
        else None,
        workers=options["workers"],
        leader_elect=options["leader_elect"],
        lease_namespace=options["lease_namespace"],
        lease_name=options["lease_name"],
        gang_schedulers=gang_schedulers,
        native_gang_schedulers=native_gang_schedulers,
        qps=options["qps"],
        request_timeout=max(0.5, options["request_timeout"]),
        burst=options["burst"],
        resync_period=max(1.0, options["resync_period"]),
        event_batch_period=options["event_batch_period"],
        health_port=options["health_port"],
        metrics_port=options["metrics_port"],
        bind_address=options["bind_address"],
        disable_network_policy=options["disable_network_policy"],
        ssh_key_type=cast(Literal["rsa", "ed25519"], options["ssh_key_type"]),
        log_level=options["log_level"],
        log_format=stderr_log_format(options["log_format"]),
        elastic=options["elastic"],
        kueue=options["kueue"],
        elastic_period=options["elastic_period"],
        elastic_dry_run=options["elastic_dry_run"],
        elastic_max_step=options["elastic_max_step"],
        elastic_min_growth=options["elastic_min_growth"],
        elastic_resize_cooldown=options["elastic_resize_cooldown"],
        gpu_resource=options["gpu_resource"],
    )
    sys.exit(run_controller(settings))


def run_controller(settings: Settings) -> int:
    """Run until SIGTERM/SIGINT; returns the exit code."""
    configure_logging(settings.log_level, settings.log_format)

    try:
        api_client = load_api_client(settings.kubeconfig, component=foreignwriters.OWN_MANAGER)
    except Exception as exc:
        log.error("cannot load the Kubernetes configuration", extra={"error": str(exc)})
        return 2
    # SIGTERM/SIGINT set `stop` from a watcher thread, never inside the handler (see
    # kubeio.signals): the controllers then drain, the Lease is released and the process exits.
    stop = install_stop_signals()
    manager = Manager(settings, api_client)
    jobs = add_controllers(settings, manager)
    manager.start()
    if settings.elastic:
        _start_elastic(settings, manager, jobs, stop)
    while not stop.wait(1.0):
        pass
    manager.shutdown()
    api_client.close()  # type: ignore[no-untyped-call]
    return 0


def add_controllers(settings: Settings, manager: Manager) -> Controller:
    """The process's controllers, as `settings.controllers` enables them, added to `manager`
    (the Job controller first: it subscribes to the shared watches first); returns the Job
    controller."""
    jobs = manager.add(
        Controller(
            settings,
            manager.api_client,
            kube=manager.kube,
            metrics=manager.metrics,
            recorder=manager.recorder,
            is_leader=manager.is_leader,
            watches=manager.watches,
        )
    )
    # CronJobs, Queues, JobFlows, workloads' PodGroups: each with its own work queue, acting only
    # while this process leads.
    shared = (manager.kube, manager.recorder, manager.is_leader)
    watches = manager.watches
    for loop in _LOOPS:
        if enabled(_LOOP_NAMES[loop], settings.controllers):
            manager.add(loop(*shared, watches=watches))
    if enabled(_LOOP_NAMES[QueueController], settings.controllers):
        queues = manager.add(
            QueueController(*shared, default_queue=settings.default_queue, watches=watches)
        )
        manager.metrics.registry.register(QueueCollector(queues.watched))
    if enabled(PG_CONTROLLER, settings.controllers):
        manager.add(
            PodGroupController(
                *shared,
                scheduler_names=settings.gang_schedulers,
                inherit_owner_annotations=settings.inherit_owner_annotations,
                watches=watches,
            )
        )
    return jobs


_LOOPS: tuple[type[CronJobController] | type[JobFlowController], ...] = (
    CronJobController,
    JobFlowController,
)
_LOOP_NAMES: dict[
    type[CronJobController] | type[QueueController] | type[JobFlowController], str
] = {
    CronJobController: "cronjob-controller",
    QueueController: "queue-controller",
    JobFlowController: "jobflow-controller",
}


def _start_elastic(
    settings: Settings, manager: Manager, jobs: Controller, stop: threading.Event
) -> None:
    loop = ElasticLoop(
        manager.api_client,
        settings.elastic_period,
        settings.elastic_dry_run,
        settings.elastic_max_step,
        settings.gpu_resource,
        manager.is_leader,
        stop,
        registry=manager.metrics.registry,
        kube=manager.kube,
        min_growth=settings.elastic_min_growth,
        resize_cooldown=settings.elastic_resize_cooldown,
        list_jobs=jobs.jobs,
    )
    jobs.on_job_pending(loop.wake)
    threading.Thread(target=loop.run, name="elastic", daemon=True).start()
