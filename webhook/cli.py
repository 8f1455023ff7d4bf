"""`vcjob webhook`: the admission webhook process. Every flag is also an environment variable
(`VCJOB_WEBHOOK_<FLAG>`, e.g. VCJOB_WEBHOOK_PORT)."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import click

from shared import certgen, labels
from shared.cli import (
    require_file,
    require_free_ports,
    require_kubeconfig,
    show_environment_variables,
)
from shared.logging import LOG_FORMAT_CHOICES, configure_logging, stderr_log_format
from webhook.settings import Settings, parse_feature_gates

log = logging.getLogger("webhook")

ENV_PREFIX = "VCJOB_WEBHOOK"
FILE = click.Path(dir_okay=False, path_type=Path)


def _feature_gates(ctx: click.Context, param: click.Parameter, value: str) -> frozenset[str]:
    try:
        return parse_feature_gates(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _api_client(kubeconfig: Path | None) -> Any:
    """An API client from the kubeconfig, or the in-cluster service account (kubeio's loader)."""
    from kubeio.client import load_api_client

    return load_api_client(
        str(kubeconfig) if kubeconfig is not None else None, component="vcjob-webhook"
    )


def _start_self_managed_certs(
    api_client: Any,
    namespace: str,
    secret: str,
    service: str,
    cert_dir: Path,
    mutating_config: str,
    validating_config: str,
) -> threading.Event:
    from webhook.selfcerts import SelfManagedCerts, service_dns_names

    dns_names = service_dns_names(service, namespace)
    certs = SelfManagedCerts(
        api_client=api_client,
        namespace=namespace,
        secret_name=secret,
        dns_names=dns_names,
        cert_dir=cert_dir,
        mutating_config=mutating_config,
        validating_config=validating_config,
    )
    certs.ensure()
    stop = threading.Event()
    threading.Thread(target=certs.run, args=(stop,), name="cert-renewal", daemon=True).start()
    return stop


@show_environment_variables
@click.command("webhook", context_settings={"auto_envvar_prefix": ENV_PREFIX})
@click.option("--host", default="0.0.0.0", show_default=True, help="Address to listen on.")  # noqa: S104
@click.option(
    "--port",
    default=9443,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="TLS port of the admission endpoints (0: any free port).",
)
@click.option("--tls-cert-file", type=FILE, help="PEM serving certificate (reloaded on change).")
@click.option("--tls-private-key-file", type=FILE, help="PEM private key of the certificate.")
@click.option(
    "--scheduler-name",
    default=labels.DEFAULT_SCHEDULER,
    show_default=True,
    help="Default spec.schedulerName of new jobs.",
)
@click.option(
    "--queue-check",
    type=click.Choice(["on", "off"]),
    default="on",
    show_default=True,
    help="Check that spec.queue exists, is Open and is a leaf queue.",
)
@click.option(
    "--kubeconfig", type=FILE, help="Kubeconfig for the Queue cache (in-cluster if absent)."
)
@click.option(
    "--health-port",
    default=8081,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Plain-HTTP port of /healthz and /readyz.",
)
@click.option(
    "--metrics-port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Plain-HTTP port of /metrics.",
)
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
)
@click.option(
    "--log-format",
    default="auto",
    show_default=True,
    type=click.Choice(LOG_FORMAT_CHOICES),
    help="Log format: auto (text when stderr is a terminal, JSON lines otherwise), json or text.",
)
@click.option(
    "--shutdown-delay",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds to keep serving after SIGTERM while /readyz reports not ready.",
)
@click.option(
    "--cert-reload-interval",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0.1),
    help="Seconds between checks of the certificate files.",
)
@click.option(
    "--read-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.1),
    help="Seconds a client has to send a request's head and its body; a stalled upload then "
    "gets 408, a stalled head a closed connection.",
)
@click.option(
    "--max-concurrent-requests",
    default=16,
    show_default=True,
    type=click.IntRange(1),
    help="Admission requests handled at once; beyond it a fast 429 (bounds memory).",
)
@click.option(
    "--certs-mode",
    type=click.Choice(["files", "self"]),
    default="files",
    show_default=True,
    help="files: serve --tls-cert-file/--tls-private-key-file; self: issue, store in a "
    "Secret, inject the caBundle and rotate the certificates.",
)
@click.option(
    "--certs-secret",
    default="vcjob-webhook-certs",
    show_default=True,
    help="Secret holding the CA and serving certificate (self mode).",
)
@click.option(
    "--certs-namespace",
    default="vcjob-system",
    show_default=True,
    help="Namespace of the Secret and the Service (self mode).",
)
@click.option(
    "--certs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/tmp/vcjob-webhook-certs"),  # noqa: S108 - an emptyDir in the Pod
    show_default=True,
    help="Where self mode writes tls.crt and tls.key.",
)
@click.option(
    "--service-name",
    default="vcjob-webhook",
    show_default=True,
    help="The webhook Service; the certificate names it, NAME.NS and NAME.NS.svc.",
)
@click.option(
    "--mutating-config",
    default="vcjob-mutating-webhook",
    show_default=True,
    help="MutatingWebhookConfiguration whose caBundle self mode patches.",
)
@click.option(
    "--queue-delete-requires-closed/--no-queue-delete-requires-closed",
    default=False,
    show_default=True,
    help="Deny deleting a Queue that is not Closed, as Volcano before 1.14 did (off: a Queue "
    "goes in any state, as in Volcano 1.14 and later).",
)
@click.option(
    "--feature-gates",
    default="",
    callback=_feature_gates,
    help="Volcano's alpha features, as Name=true pairs separated by commas: "
    "SchedulingGatesQueueAdmission (pods annotated scheduling.volcano.sh/queue-allocation-gate="
    "true get a scheduling gate the gang scheduler lifts once their queue has room; needs the "
    "/pods/mutate webhook registered).",
)
@click.option(
    "--validating-config",
    default="vcjob-validating-webhook",
    show_default=True,
    help="ValidatingWebhookConfiguration whose caBundle self mode patches.",
)
def webhook_command(
    host: str,
    port: int,
    tls_cert_file: Path | None,
    tls_private_key_file: Path | None,
    scheduler_name: str,
    queue_check: str,
    kubeconfig: Path | None,
    health_port: int,
    metrics_port: int,
    log_level: str,
    log_format: str,
    shutdown_delay: float,
    cert_reload_interval: float,
    read_timeout: float,
    max_concurrent_requests: int,
    certs_mode: str,
    certs_secret: str,
    certs_namespace: str,
    certs_dir: Path,
    service_name: str,
    mutating_config: str,
    validating_config: str,
    queue_delete_requires_closed: bool,
    feature_gates: frozenset[str],
) -> None:
    """Serve the Job admission webhook (mutating and validating) over TLS."""
    if certs_mode == "files":
        require_file("--tls-cert-file", tls_cert_file)
        require_file("--tls-private-key-file", tls_private_key_file)
    if queue_check == "on" or certs_mode == "self":
        require_kubeconfig(kubeconfig)
    log_format = stderr_log_format(log_format)
    configure_logging(log_level, log_format)
    api_client: Any = None
    if queue_check == "on" or certs_mode == "self":
        try:
            api_client = _api_client(kubeconfig)
        except Exception as exc:
            raise click.ClickException(
                f"cannot reach the API server ({exc}); pass --kubeconfig, run in a cluster, "
                "or use --queue-check=off with --certs-mode=files"
            ) from exc
    renewal_stop: threading.Event | None = None
    if certs_mode == "self":
        renewal_stop = _start_self_managed_certs(
            api_client,
            certs_namespace,
            certs_secret,
            service_name,
            certs_dir,
            mutating_config,
            validating_config,
        )
        tls_cert_file = certs_dir / certgen.CERT_FILE
        tls_private_key_file = certs_dir / certgen.KEY_FILE
    if tls_cert_file is None or tls_private_key_file is None:
        raise click.UsageError(
            "--tls-cert-file and --tls-private-key-file are required (or --certs-mode self)"
        )
    require_free_ports(
        host, {"--port": port, "--health-port": health_port, "--metrics-port": metrics_port}
    )
    settings = Settings(
        port=port,
        tls_cert_file=tls_cert_file,
        tls_private_key_file=tls_private_key_file,
        scheduler_name=scheduler_name,
        queue_check=queue_check == "on",
        kubeconfig=kubeconfig,
        health_port=health_port,
        metrics_port=metrics_port,
        host=host,
        log_level=log_level,
        log_format="text" if log_format == "text" else "json",
        cert_reload_interval=cert_reload_interval,
        shutdown_delay=shutdown_delay,
        read_timeout=read_timeout,
        max_concurrent_requests=max_concurrent_requests,
        queue_delete_requires_closed=queue_delete_requires_closed,
        feature_gates=feature_gates,
    )
    cluster = None
    if api_client is not None:
        from webhook.clusterlookups import KubeClusterLookups

        cluster = KubeClusterLookups(api_client)
    cache = None
    if settings.queue_check:
        from webhook.queuecache import KubeQueueSource, QueueCache

        cache = QueueCache(KubeQueueSource(api_client))
        cache.start()
    from webhook.server import serve

    try:
        asyncio.run(serve(settings, cache, cluster))
    finally:
        if cache is not None:
            cache.stop()
        if renewal_stop is not None:
            renewal_stop.set()
