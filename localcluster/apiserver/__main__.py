"""`python -m localcluster.apiserver --port PORT --dir DIR [--data-dir D] [--fault-rate F]`."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from localcluster.apiserver.faults import FaultInjector
from localcluster.apiserver.server import APIServer, APIServerConfig
from shared.logging import LOG_FORMATS, configure_logging


@click.command()
@click.option(
    "--port", type=int, default=6443, show_default=True, help="HTTPS port; 0 picks a free one."
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    default=Path(".vcjob"),
    show_default=True,
    help="Where the kubeconfig, port file and certificates go.",
)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Persist objects to SQLite here (default: in memory).",
)
@click.option(
    "--fault-rate",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Share of API requests that fail or hang (env VCJOB_FAULT_RATE).",
)
@click.option("--fault-seed", type=int, default=None, help="Seed for reproducible fault injection.")
@click.option(
    "--audit-log",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Append one JSON line per request (user, verb, resource, namespace, name, code).",
)
@click.option(
    "--pods-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The simulated kubelet's pod folders, for `kubectl logs` of pods that really run.",
)
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="json", show_default=True)
def main(
    port: int,
    directory: Path,
    data_dir: Path | None,
    fault_rate: float | None,
    fault_seed: int | None,
    audit_log: Path | None,
    pods_dir: Path | None,
    log_format: str,
) -> None:
    """Serve the Kubernetes API over HTTPS on 127.0.0.1 and write DIR/kubeconfig once ready.

    The kubeconfig's user is the admin (system:masters); ServiceAccount tokens are authorized
    by RBAC.
    """
    configure_logging(fmt=log_format)
    try:
        rate = fault_rate if fault_rate is not None else FaultInjector.rate_from_env()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="VCJOB_FAULT_RATE") from exc
    config = APIServerConfig(
        directory=directory,
        port=port,
        data_dir=data_dir,
        fault_rate=rate,
        fault_seed=fault_seed,
        audit_log=audit_log,
        pods_dir=pods_dir,
    )
    try:
        server = APIServer(config)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
