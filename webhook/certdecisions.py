"""The decisions behind self-managed webhook certificates (`webhook.selfcerts`), as pure
functions of the stored material and the time: whether to renew (`renewal_due`, `decide`), which
CAs the caBundle holds (`ca_bundle`), how long a serving certificate lives (`serving_days`), the
Secret's material read and checked (`parse_material`) and renewed (`renew`), and the caBundle
patch of a webhook configuration (`ca_bundle_patch`).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from shared import certgen

CA_CERT_KEY: Final = "ca.crt"
CA_KEY_KEY: Final = "ca.key"
TLS_CERT_KEY: Final = "tls.crt"
TLS_KEY_KEY: Final = "tls.key"

RENEW_AT_FRACTION: Final = 2 / 3
# How old (by notBefore) the newest CA must be before the serving certificate moves onto it, so
# that every API server has seen the caBundle that contains it. issue_ca back-dates notBefore by
# five minutes, so this is about five minutes after the CA was made.
CA_SETTLE: Final = dt.timedelta(minutes=10)
CA_COMMON_NAME: Final = "vcjob-webhook-ca"


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
            CA_CERT_KEY: b64(self.ca_certs),
            CA_KEY_KEY: b64(self.ca_key),
            TLS_CERT_KEY: b64(self.tls_cert),
            TLS_KEY_KEY: b64(self.tls_key),
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


def b64(raw: bytes) -> str:
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
