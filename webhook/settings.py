"""The webhook's configuration (flags and environment variables map onto these fields)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shared import labels
from shared.featuregates import SCHEDULING_GATES_QUEUE_ADMISSION, parse_feature_gates

__all__ = ["SCHEDULING_GATES_QUEUE_ADMISSION", "Settings", "parse_feature_gates"]


@dataclass(frozen=True)
class Settings:
    port: int = 9443
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    scheduler_name: str = labels.DEFAULT_SCHEDULER
    queue_check: bool = True
    kubeconfig: Path | None = None
    health_port: int = 8081
    metrics_port: int = 8080
    host: str = "0.0.0.0"  # noqa: S104 - a webhook Pod must accept the API server's connections
    log_level: str = "info"
    log_format: Literal["json", "text"] = "json"
    # Seconds between checks of the certificate files for a rotation.
    cert_reload_interval: float = 5.0
    # Seconds to keep serving after SIGTERM with /readyz false, so endpoints drop the Pod first.
    shutdown_delay: float = 5.0
    max_body_bytes: int = 3 * 1024 * 1024
    # Seconds a client has to send a whole request body; a stalled upload is cut off after it.
    read_timeout: float = 10.0
    # Admission requests handled at once; beyond it a request gets a fast 429. With the body
    # limit this bounds the memory held by request bodies (16 x 3 MiB).
    max_concurrent_requests: int = 16
    # Queue DELETE: with this on, only a Closed queue may go (Volcano before 1.14). Off by default,
    # as Volcano today deletes a queue in any state.
    queue_delete_requires_closed: bool = False
    # Volcano's alpha feature gates the webhook honours (`--feature-gates Name=true`).
    feature_gates: frozenset[str] = frozenset()
