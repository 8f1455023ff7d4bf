"""Self-managed webhook certificates (`--certs-mode self`, the chart's default).

The webhook keeps its own CA and serving certificate in a Secret (`ca.crt`, `ca.key`, `tls.crt`,
`tls.key`; type kubernetes.io/tls), writes the serving pair into a folder the TLS layer reloads
from, and patches the CA bundle into its two webhook configurations. Replicas coordinate through
the Secret's resourceVersion: each writes with a compare-and-swap, the first write wins and the
others adopt the winner's certificates.

Rotation: the serving certificate is renewed at 2/3 of its lifetime; the CA too, and during the
overlap `ca.crt` (and so the caBundle) holds the new CA first and the old ones after it until they
expire. A serving certificate signed by an older CA is replaced only once the newest CA has been
published for a while, so API servers trust the new chain before it is served.

The decisions (`decide`, `ca_bundle`, `renewal_due`…) are pure functions of the stored material and
the time, in `webhook.certdecisions`; this module is the thin shell that reads and writes Kubernetes
and files (`SelfManagedCerts`), and re-exports the decisions it is known by.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from kubeio.client import ApiClient, Kube
from kubeio.errors import AlreadyExistsError, ConflictError, NotFoundError
from webhook.certdecisions import (
    CA_CERT_KEY,
    CA_COMMON_NAME,
    CA_KEY_KEY,
    CA_SETTLE,
    RENEW_AT_FRACTION,
    TLS_CERT_KEY,
    TLS_KEY_KEY,
    BundledCA,
    Decision,
    Material,
    Parsed,
    StoredState,
    Validity,
    b64,
    ca_bundle,
    ca_bundle_patch,
    decide,
    expired,
    parse_material,
    renew,
    renewal_due,
    serving_days,
)

__all__ = [
    "CA_CERT_KEY",
    "CA_COMMON_NAME",
    "CA_KEY_KEY",
    "CA_SETTLE",
    "RENEW_AT_FRACTION",
    "SECRET_TYPE",
    "TLS_CERT_KEY",
    "TLS_KEY_KEY",
    "BundledCA",
    "Decision",
    "Material",
    "Parsed",
    "SelfManagedCerts",
    "StoredState",
    "Validity",
    "ca_bundle",
    "ca_bundle_patch",
    "decide",
    "expired",
    "parse_material",
    "renew",
    "renewal_due",
    "service_dns_names",
    "serving_days",
    "utc_now",
    "write_atomically",
]

log = logging.getLogger(__name__)

SECRET_TYPE: Final = "kubernetes.io/tls"  # noqa: S105 - a Secret type, not a credential

RESYNC_SECONDS: Final = 60.0
RETRY_SECONDS: Final = 5.0
MAX_CAS_ATTEMPTS: Final = 5
REQUEST_TIMEOUT: Final = (5.0, 30.0)

WEBHOOK_CONFIG_PATHS: Final = {
    "mutating": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{name}",
    "validating": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{name}",
}


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server may use to reach a webhook Service."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


# ----- the shell ------------------------------------------------------------------------------


class SelfManagedCerts:
    """Keeps the webhook's certificates in a Secret, on disk and in the webhook configurations."""

    def __init__(
        self,
        api_client: ApiClient,
        namespace: str,
        secret_name: str,
        dns_names: list[str],
        cert_dir: Path,
        mutating_config: str,
        validating_config: str,
        *,
        clock: Callable[[], dt.datetime] = utc_now,
        ca_days: int = 3650,
        cert_days: int = 365,
        resync_seconds: float = RESYNC_SECONDS,
    ) -> None:
        if not dns_names:
            raise ValueError("dns_names must name at least one host for the serving certificate")
        if not 1 <= cert_days < ca_days:
            raise ValueError(
                f"cert_days ({cert_days}) must be at least 1 and below ca_days ({ca_days})"
            )
        self._kube = Kube(api_client, qps=0, request_timeout=REQUEST_TIMEOUT[1])
        self.namespace = namespace
        self.secret_name = secret_name
        self.dns_names = list(dns_names)
        self.cert_dir = Path(cert_dir)
        self.mutating_config = mutating_config
        self.validating_config = validating_config
        self._clock = clock
        self._ca_days = ca_days
        self._cert_days = cert_days
        self._resync_seconds = resync_seconds

    @property
    def cert_file(self) -> Path:
        return self.cert_dir / TLS_CERT_KEY

    @property
    def key_file(self) -> Path:
        return self.cert_dir / TLS_KEY_KEY

    @property
    def ca_file(self) -> Path:
        return self.cert_dir / CA_CERT_KEY

    def ensure(self) -> None:
        """Make the Secret, the files and both caBundles hold valid, current certificates."""
        material = self._sync_secret()
        self._write_files(material)
        self._patch_ca_bundles(material.ca_certs)

    def run(self, stop: threading.Event) -> None:
        """Re-sync every ~60 s until `stop` is set; errors are logged and retried sooner."""
        delay = self._resync_seconds
        while not stop.wait(delay):
            try:
                self.ensure()
            except Exception:
                log.exception(
                    "certificate sync failed",
                    extra={"secret": self.secret_name, "namespace": self.namespace},
                )
                delay = min(RETRY_SECONDS, self._resync_seconds)
            else:
                delay = self._resync_seconds

    # the Secret

    def _sync_secret(self) -> Material:
        for _ in range(MAX_CAS_ATTEMPTS):
            secret = self._read_secret()
            material = Material.from_secret_data(secret.get("data") if secret else None)
            parsed = parse_material(material, self.dns_names)
            now = self._clock()
            decision = decide(parsed.state, now)
            if not decision.changes:
                return material
            renewed = renew(
                material,
                parsed,
                decision,
                self.dns_names,
                now,
                ca_days=self._ca_days,
                cert_days=self._cert_days,
            )
            if self._store(secret, renewed):
                log.info(
                    "certificates issued",
                    extra={
                        "secret": self.secret_name,
                        "namespace": self.namespace,
                        "reason": decision.reason,
                        "new_ca": decision.new_ca,
                        "new_serving": decision.new_serving,
                    },
                )
                return renewed
            log.info(
                "another replica stored certificates first; using them",
                extra={"secret": self.secret_name, "namespace": self.namespace},
            )
        raise RuntimeError(
            f"could not store certificates in Secret {self.namespace}/{self.secret_name}: "
            f"it changed under every one of {MAX_CAS_ATTEMPTS} attempts"
        )

    def _secret_path(self, name: str | None = None) -> str:
        base = f"/api/v1/namespaces/{self.namespace}/secrets"
        return f"{base}/{name}" if name else base

    def _read_secret(self) -> dict[str, Any] | None:
        try:
            return self._request("GET", self._secret_path(self.secret_name))
        except NotFoundError:
            return None

    def _store(self, secret: dict[str, Any] | None, material: Material) -> bool:
        """Compare-and-swap: False when someone else wrote the Secret since we read it."""
        try:
            if secret is None:
                body = {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": self.secret_name, "namespace": self.namespace},
                    "type": SECRET_TYPE,
                    "data": material.to_secret_data(),
                }
                self._request("POST", self._secret_path(), body)
            else:
                # PUT the object as read: its metadata.resourceVersion makes the write conditional.
                body = dict(secret)
                body["data"] = {**(secret.get("data") or {}), **material.to_secret_data()}
                self._request("PUT", self._secret_path(self.secret_name), body)
        except (ConflictError, AlreadyExistsError):
            return False
        return True

    # the files

    def _write_files(self, material: Material) -> None:
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        # The key goes first and the certificate last: the TLS layer reloads on the certificate.
        changed = write_atomically(self.key_file, material.tls_key, mode=0o600)
        changed = write_atomically(self.ca_file, material.ca_certs, mode=0o644) or changed
        changed = write_atomically(self.cert_file, material.tls_cert, mode=0o644) or changed
        if changed:
            log.info("certificate files written", extra={"cert_dir": str(self.cert_dir)})

    # the webhook configurations

    def _patch_ca_bundles(self, ca_certs: bytes) -> None:
        bundle = b64(ca_certs)
        for kind, name in (
            ("mutating", self.mutating_config),
            ("validating", self.validating_config),
        ):
            path = WEBHOOK_CONFIG_PATHS[kind].format(name=name)
            try:
                config = self._request("GET", path)
            except NotFoundError:
                log.warning(
                    "webhook configuration not found; caBundle not patched",
                    extra={"kind": kind, "configuration": name},
                )
                continue
            operations = ca_bundle_patch(config, bundle)
            if operations:
                self._request("PATCH", path, operations, "application/json-patch+json")
                log.info(
                    "caBundle patched",
                    extra={"kind": kind, "configuration": name, "webhooks": len(operations) // 2},
                )

    # HTTP through kubeio's client (its connection pool, credentials and error classes)

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        decoded = self._kube.request(method, path, body=body, content_type=content_type)
        if not isinstance(decoded, dict):
            raise TypeError(f"unexpected body for {method} {path}")
        return decoded


def write_atomically(path: Path, content: bytes, *, mode: int) -> bool:
    """Write `content` to `path` atomically (temp file + rename); False when already identical."""
    with contextlib.suppress(OSError):
        if path.read_bytes() == content:
            return False
    descriptor, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    temp = Path(temp_name)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        temp.chmod(mode)
        temp.replace(path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return True
