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

The decisions (`decide`, `ca_bundle`, `renewal_due`) are pure functions of the stored material and
the time; `SelfManagedCerts` is the thin shell that reads and writes Kubernetes and files.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime as dt
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from kubeio.client import ApiClient, Kube
from kubeio.errors import AlreadyExistsError, ConflictError, NotFoundError
from shared import certgen

log = logging.getLogger(__name__)

CA_CERT_KEY: Final = "ca.crt"
CA_KEY_KEY: Final = "ca.key"
TLS_CERT_KEY: Final = "tls.crt"
TLS_KEY_KEY: Final = "tls.key"
SECRET_TYPE: Final = "kubernetes.io/tls"  # noqa: S105 - a Secret type, not a credential

RENEW_AT_FRACTION: Final = 2 / 3
# How old (by notBefore) the newest CA must be before the serving certificate moves onto it, so
# that every API server has seen the caBundle that contains it. issue_ca back-dates notBefore by
# five minutes, so this is about five minutes after the CA was made.
CA_SETTLE: Final = dt.timedelta(minutes=10)
RESYNC_SECONDS: Final = 60.0
RETRY_SECONDS: Final = 5.0
MAX_CAS_ATTEMPTS: Final = 5
REQUEST_TIMEOUT: Final = (5.0, 30.0)
CA_COMMON_NAME: Final = "vcjob-webhook-ca"

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


# ----- pure decisions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Validity:
    not_before: dt.datetime
    not_after: dt.datetime

    @property
    def renewal_point(self) -> dt.datetime:
        return self.not_before + (self.not_after - self.not_before) * RENEW_AT_FRACTION

    @classmethod
    def of(cls, cert: x509.Certificate) -> Validity:
        return cls(cert.not_valid_before_utc, cert.not_valid_after_utc)


def renewal_due(validity: Validity, now: dt.datetime) -> bool:
    """Renew at 2/3 of the lifetime (and of course once expired)."""
    return now >= validity.renewal_point


def expired(validity: Validity, now: dt.datetime) -> bool:
    return now >= validity.not_after


@dataclass(frozen=True)
class StoredState:
    """What the Secret holds, reduced to what the decision needs.

    `ca` is the signing CA (the first certificate of ca.crt, with ca.key matching it); `serving` is
    tls.crt when tls.key matches it. None means missing or unusable. `bundle` is every CA in
    ca.crt (the caBundle).
    """

    ca: Validity | None = None
    serving: Validity | None = None
    serving_signed_by_ca: bool = False
    serving_covers_hosts: bool = False
    bundle: tuple[Validity, ...] = ()


@dataclass(frozen=True)
class Decision:
    new_ca: bool
    new_serving: bool
    reason: str
    prune: bool = False

    @property
    def changes(self) -> bool:
        return self.new_ca or self.new_serving or self.prune


def decide(state: StoredState, now: dt.datetime) -> Decision:
    """What to issue, given the stored certificates and the time. First matching rule wins."""
    ca, serving = state.ca, state.serving
    if ca is None:
        return Decision(True, True, "no usable CA")
    if expired(ca, now):
        return Decision(True, True, "CA expired")
    serving_usable = (
        serving is not None and not expired(serving, now) and state.serving_covers_hosts
    )
    if renewal_due(ca, now):
        # The new CA is published first; the serving certificate follows once it has settled
        # (unless the current one cannot be served anyway).
        return Decision(True, not serving_usable, "CA renewal due")
    if serving is None:
        return Decision(False, True, "no usable serving certificate")
    if expired(serving, now):
        return Decision(False, True, "serving certificate expired")
    if not state.serving_covers_hosts:
        return Decision(False, True, "serving certificate does not cover the service names")
    if not state.serving_signed_by_ca:
        if now >= ca.not_before + CA_SETTLE:
            return Decision(False, True, "serving certificate is signed by a previous CA")
        return Decision(False, False, "new CA settling")
    if renewal_due(serving, now):
        return Decision(False, True, "serving certificate renewal due")
    if any(expired(ca, now) for ca in state.bundle):
        return Decision(False, False, "expired CA left the bundle", prune=True)
    return Decision(False, False, "up to date")


@dataclass(frozen=True)
class BundledCA:
    pem: bytes
    validity: Validity


def ca_bundle(cas: Sequence[BundledCA], now: dt.datetime) -> list[BundledCA]:
    """The CAs to trust: every unexpired one, newest (signing) first, without duplicates."""
    kept: list[BundledCA] = []
    for ca in cas:
        if not expired(ca.validity, now) and all(ca.pem != k.pem for k in kept):
            kept.append(ca)
    return kept


def serving_days(cert_days: int, ca: Validity, now: dt.datetime) -> int:
    """The serving certificate's lifetime, never past its CA's expiry (at least one day)."""
    remaining = (ca.not_after - now).days
    return max(1, min(cert_days, remaining))


# ----- parsing the stored material ------------------------------------------------------------


@dataclass(frozen=True)
class Material:
    """The PEM contents of the Secret."""

    ca_certs: bytes
    ca_key: bytes
    tls_cert: bytes
    tls_key: bytes

    def to_secret_data(self) -> dict[str, str]:
        return {
            CA_CERT_KEY: _b64(self.ca_certs),
            CA_KEY_KEY: _b64(self.ca_key),
            TLS_CERT_KEY: _b64(self.tls_cert),
            TLS_KEY_KEY: _b64(self.tls_key),
        }

    @classmethod
    def from_secret_data(cls, data: dict[str, str] | None) -> Material:
        data = data or {}
        return cls(
            ca_certs=_unb64(data.get(CA_CERT_KEY)),
            ca_key=_unb64(data.get(CA_KEY_KEY)),
            tls_cert=_unb64(data.get(TLS_CERT_KEY)),
            tls_key=_unb64(data.get(TLS_KEY_KEY)),
        )


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _unb64(value: str | None) -> bytes:
    if not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b""


def _load_certs(pem: bytes) -> list[x509.Certificate]:
    if not pem.strip():
        return []
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError:
        return []


def _key_matches(cert: x509.Certificate, key_pem: bytes) -> bool:
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        return False
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    return bool(cert.public_key().public_bytes(*spki) == key.public_key().public_bytes(*spki))


def _hosts_of(cert: x509.Certificate) -> set[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    hosts = set(san.get_values_for_type(x509.DNSName))
    hosts.update(str(ip) for ip in san.get_values_for_type(x509.IPAddress))
    return hosts


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


@dataclass(frozen=True)
class Parsed:
    state: StoredState
    cas: list[BundledCA]


def parse_material(material: Material, hosts: Sequence[str]) -> Parsed:
    """Reduce the stored PEMs to the decision's inputs. Anything unreadable counts as missing."""
    ca_certs = _load_certs(material.ca_certs)
    cas = [BundledCA(c.public_bytes(serialization.Encoding.PEM), Validity.of(c)) for c in ca_certs]
    signing = ca_certs[0] if ca_certs and _key_matches(ca_certs[0], material.ca_key) else None
    serving_certs = _load_certs(material.tls_cert)
    serving = (
        serving_certs[0]
        if serving_certs and _key_matches(serving_certs[0], material.tls_key)
        else None
    )
    state = StoredState(
        ca=Validity.of(signing) if signing is not None else None,
        serving=Validity.of(serving) if serving is not None else None,
        serving_signed_by_ca=(
            serving is not None and signing is not None and _signed_by(serving, signing)
        ),
        serving_covers_hosts=serving is not None and set(hosts) <= _hosts_of(serving),
        bundle=tuple(ca.validity for ca in cas),
    )
    return Parsed(state=state, cas=cas)


def renew(
    material: Material,
    parsed: Parsed,
    decision: Decision,
    hosts: Sequence[str],
    now: dt.datetime,
    *,
    ca_days: int,
    cert_days: int,
) -> Material:
    """New material carrying out `decision` (issues keys; no I/O)."""
    ca_pair = certgen.KeyPair(material.ca_certs, material.ca_key)
    cas = list(parsed.cas)
    if decision.new_ca:
        ca_pair = certgen.issue_ca(common_name=CA_COMMON_NAME, days=ca_days, now=now)
        cas.insert(0, BundledCA(ca_pair.cert_pem, Validity.of(ca_pair.certificate)))
    signing = x509.load_pem_x509_certificates(ca_pair.cert_pem)[0]
    signing_pair = certgen.KeyPair(
        signing.public_bytes(serialization.Encoding.PEM), ca_pair.key_pem
    )
    bundle = ca_bundle(cas, now)
    tls_cert, tls_key = material.tls_cert, material.tls_key
    if decision.new_serving:
        days = serving_days(cert_days, Validity.of(signing), now)
        serving = certgen.issue_serving(signing_pair, list(hosts), days=days, now=now)
        tls_cert, tls_key = serving.cert_pem, serving.key_pem
    return Material(
        ca_certs=b"".join(ca.pem for ca in bundle),
        ca_key=signing_pair.key_pem,
        tls_cert=tls_cert,
        tls_key=tls_key,
    )


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
        bundle = _b64(ca_certs)
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


def ca_bundle_patch(config: dict[str, Any], bundle_b64: str) -> list[dict[str, Any]]:
    """JSON Patch setting caBundle on every webhook that lacks it; each guarded by a name test."""
    operations: list[dict[str, Any]] = []
    for index, webhook in enumerate(config.get("webhooks") or []):
        client_config = webhook.get("clientConfig") or {}
        if client_config.get("caBundle") == bundle_b64:
            continue
        operations.append(
            {"op": "test", "path": f"/webhooks/{index}/name", "value": webhook.get("name")}
        )
        operations.append(
            {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle_b64}
        )
    return operations


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
