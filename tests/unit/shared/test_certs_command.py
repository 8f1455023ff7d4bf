"""`vcjob certs`: a CA and a serving certificate for the hosts named, IPs as IP SANs."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from click.testing import CliRunner
from cryptography import x509

from shared.cli import main


def test_writes_a_ca_and_a_serving_certificate_for_the_hosts(tmp_path: Path) -> None:
    hosts = ["--host", "127.0.0.1", "--host", "vcjob-webhook.vcjob-system.svc", "--host", "*.x.io"]
    result = CliRunner().invoke(main, ["certs", "--out-dir", str(tmp_path), *hosts, "--days", "3"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert sans.get_values_for_type(x509.DNSName) == ["vcjob-webhook.vcjob-system.svc", "*.x.io"]
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    assert cert.issuer == ca.subject
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days <= 3


def test_a_host_that_is_no_name_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["certs", "--out-dir", str(tmp_path), "--host", "bad host!"])
    assert result.exit_code == 2
    assert "'bad host!' is neither an IP address nor a DNS name" in result.output
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
