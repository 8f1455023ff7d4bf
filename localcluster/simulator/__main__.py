"""`python -m localcluster.simulator --kubeconfig K`: run the node agent against an API server."""

from __future__ import annotations

import errno
import logging
import tempfile
from pathlib import Path

import click

from kubeio.signals import install_stop_signals
from localcluster.simulator.client import KubeClient
from localcluster.simulator.images import image_mappings
from localcluster.simulator.kubeletapi import KubeletServer
from localcluster.simulator.kubeletpods import NodePods
from localcluster.simulator.nodes import DEFAULT_KUBELET_PORT
from localcluster.simulator.runner import Simulator
from localcluster.simulator.runtime import ProcessRuntime, runtime_available
from shared.duration import parse_duration
from shared.logging import LOG_FORMAT_CHOICES, configure_logging

log = logging.getLogger("localcluster.simulator")
# Every node advertises this InternalIP (kube-apiserver runs with
# --kubelet-preferred-address-types=InternalIP) and the one kubelet API serves them all.
KUBELET_ADDRESS = "127.0.0.1"


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
@click.option(
    "--no-gang-scheduling",
    is_flag=True,
    help="Leave PodGroups and the gang scheduler's pods to another scheduler (Volcano's own): "
    "only run the pods bound to the nodes.",
)
@click.option(
    "--kubelet-port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_KUBELET_PORT,
    show_default=True,
    help="Port of the kubelet API the nodes advertise (status.daemonEndpoints.kubeletEndpoint).",
)
@click.option(
    "--log-format", type=click.Choice(LOG_FORMAT_CHOICES), default="auto", show_default=True
)
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
    no_gang_scheduling: bool,
    kubelet_port: int,
    log_format: str,
    pods_dir: Path | None,
    run_images: tuple[str, ...],
) -> None:
    """Keep the simulated nodes alive, schedule and run their pods until SIGTERM or Ctrl-C."""
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
            gang_scheduling=not no_gang_scheduling,
            runtime=processes,
            kubelet_port=kubelet_port,
        )
        # The kubelet API kube-apiserver calls for logs, exec, attach and port-forward; its
        # certificate is written beside the pods' folders (or a temporary folder).
        kubelet_dir = (pods_dir or Path(tempfile.mkdtemp(prefix="vcjob-kubelet-"))) / "kubelet"
        kubelet_dir.mkdir(parents=True, exist_ok=True)
        kubelet_api = KubeletServer(
            NodePods(lambda ns, name: simulator.pods.get(f"{ns}/{name}"), processes),
            KUBELET_ADDRESS,
            kubelet_port,
            kubelet_dir,
        )
        simulator.kubelet_port = _serve_kubelet_api(kubelet_api)
        simulator.start()
        stop.wait()
        log.info("simulator stopping")
        kubelet_api.stop()
        if processes is not None:
            processes.shutdown()
        simulator.join(timeout=5.0)


def _serve_kubelet_api(kubelet_api: KubeletServer) -> int:
    """Start the kubelet API on its port, or on any free one when that port was taken since it
    was chosen (the nodes then advertise the new one): without the agent no gang is admitted and
    no pod runs, so a lost port must not keep it from starting. Returns the port served."""
    try:
        return kubelet_api.start()
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        log.warning(
            "kubelet port taken, serving the kubelet API on another",
            extra={"port": kubelet_api.port, "error": str(exc)},
        )
    kubelet_api.port = 0
    return kubelet_api.start()


if __name__ == "__main__":
    main()
