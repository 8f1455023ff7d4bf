"""Certificates for the webhook and the local control plane, made with `cryptography`.

One CA signs serving certificates whose SANs are the given hosts (IP literals become IP SANs).
The same functions back `vcjob certs`, the chart's self-managed mode and the test fixtures.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_FILE = "ca.crt"
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)


@dataclass(frozen=True)
class CertBundle:
    ca: KeyPair
    serving: KeyPair


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue_ca(
    common_name: str = "vcjob-ca", days: int = 3650, now: dt.datetime | None = None
) -> KeyPair:
    """A self-signed CA certificate valid for `days` days."""
    start = (now or _now()) - dt.timedelta(minutes=5)
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_serving(
    ca: KeyPair, hosts: list[str], days: int = 365, now: dt.datetime | None = None
) -> KeyPair:
    """A serving certificate for `hosts`, signed by `ca`. The first host is the common name."""
    if not hosts:
        raise ValueError("at least one host is needed for a serving certificate")
    start = (now or _now()) - dt.timedelta(minutes=5)
    ca_cert = ca.certificate
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an EC key made by issue_ca")
    key = _new_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0][:64])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue(hosts: list[str], days: int = 365, now: dt.datetime | None = None) -> CertBundle:
    """A fresh CA (ten times the serving certificate's lifetime) and a serving certificate."""
    ca = issue_ca(days=max(days * 10, 3650), now=now)
    return CertBundle(ca=ca, serving=issue_serving(ca, hosts, days=days, now=now))


def write_bundle(bundle: CertBundle, out_dir: Path) -> list[Path]:
    """Write ca.crt, tls.crt and tls.key (the key readable by its owner only)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / CA_FILE, out_dir / CERT_FILE, out_dir / KEY_FILE]
    paths[0].write_bytes(bundle.ca.cert_pem)
    paths[1].write_bytes(bundle.serving.cert_pem)
    paths[2].touch(mode=0o600)
    paths[2].chmod(0o600)
    paths[2].write_bytes(bundle.serving.key_pem)
    return paths


def not_after(cert_pem: bytes) -> dt.datetime:
    return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc


def not_before(cert_pem: bytes) -> dt.datetime:
    return x509.load_pem_x509_certificate(cert_pem).not_valid_before_utc
