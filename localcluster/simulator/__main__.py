"""`python -m localcluster.simulator --kubeconfig K`: run the simulator against an API server."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from kubeio.signals import install_stop_signals
from localcluster.simulator.client import KubeClient
from localcluster.simulator.images import image_mappings
from localcluster.simulator.runner import Simulator
from localcluster.simulator.runtime import ProcessRuntime, runtime_available
from shared.duration import parse_duration
from shared.logging import LOG_FORMATS, configure_logging

log = logging.getLogger("localcluster.simulator")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--kubeconfig",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Kubeconfig of the API server to simulate nodes for.",
)
@click.option(
    "--pod-runtime",
    default="5s",
    show_default=True,
    help="How long a pod runs when it has no sim.vcjob.io/runtime annotation.",
)
@click.option("--scheduler-name", default="volcano", show_default=True, help="Gang scheduler name.")
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="json", show_default=True)
@click.option(
    "--pods-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where pods that really run keep their volumes and logs (no process runtime without it).",
)
@click.option(
    "--run-image",
    "run_images",
    multiple=True,
    metavar="REPOSITORY=COMMAND",
    help="Run pods of this image as real processes, COMMAND standing in for its entrypoint.",
)
def main(
    kubeconfig: Path,
    pod_runtime: str,
    scheduler_name: str,
    log_format: str,
    pods_dir: Path | None,
    run_images: tuple[str, ...],
) -> None:
    """Schedule and run pods on the simulated nodes until SIGTERM or Ctrl-C."""
    configure_logging(fmt=log_format)
    try:
        runtime = parse_duration(pod_runtime)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--pod-runtime") from err
    stop = install_stop_signals()  # no lock is taken inside a signal handler
    try:
        mappings = image_mappings(run_images)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--run-image") from err
    with KubeClient(kubeconfig) as client:
        processes = None
        if pods_dir is not None:
            missing = runtime_available()
            if missing is None:
                processes = ProcessRuntime(client, kubeconfig, pods_dir, mappings, stop)
            else:
                log.warning("pods are simulated, none runs for real", extra={"reason": missing})
        simulator = Simulator(
            client,
            default_runtime=runtime,
            stop=stop,
            scheduler_name=scheduler_name,
            runtime=processes,
        )
        simulator.start()
        stop.wait()
        log.info("simulator stopping")
        if processes is not None:
            processes.shutdown()
        simulator.join(timeout=5.0)


if __name__ == "__main__":
    main()
