"""Self-managed certificates: the pure rotation decisions as tables, then the shell against an
in-memory API (compare-and-swap between replicas, caBundle patching, files on disk)."""

from __future__ import annotations

import base64
import datetime as dt
import threading
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from shared import certgen
from webhook import selfcerts
from webhook.selfcerts import (
    BundledCA,
    Decision,
    SelfManagedCerts,
    StoredState,
    Validity,
    ca_bundle,
    decide,
    renewal_due,
    serving_days,
)

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
NAMESPACE = "vcjob-system"
SECRET = "vcjob-webhook-tls"
SECRET_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets/{SECRET}"
MUTATING = "vcjob-mutating-webhook"
VALIDATING = "vcjob-validating-webhook"
MUTATING_PATH = f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{MUTATING}"
VALIDATING_PATH = (
    f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{VALIDATING}"
)
HOSTS = selfcerts.service_dns_names("vcjob-webhook", NAMESPACE)


def validity(start_days: float, end_days: float) -> Validity:
    return Validity(T0 + start_days * DAY, T0 + end_days * DAY)


# ----- pure decisions ---------------------------------------------------------------------------

RENEWAL_CASES = [
    pytest.param(validity(0, 3), T0 + 2 * DAY - dt.timedelta(seconds=1), False, id="before-2/3"),
    pytest.param(validity(0, 3), T0 + 2 * DAY, True, id="at-2/3"),
    pytest.param(validity(0, 3), T0 + 4 * DAY, True, id="expired"),
    pytest.param(validity(0, 300), T0 + 199 * DAY, False, id="long-lived-not-yet"),
]


@pytest.mark.parametrize(("cert", "now", "due"), RENEWAL_CASES)
def test_renewal_is_due_at_two_thirds_of_the_lifetime(
    cert: Validity, now: dt.datetime, due: bool
) -> None:
    assert renewal_due(cert, now) is due


CA_OK = validity(0, 3650)
SERVING_OK = validity(0, 365)
NOW = T0 + 10 * DAY


def good(
    ca: Validity | None, serving: Validity | None, bundle: tuple[Validity, ...] = ()
) -> StoredState:
    """A state whose serving certificate is signed by `ca` and names every service host."""
    return StoredState(
        ca=ca,
        serving=serving,
        serving_signed_by_ca=True,
        serving_covers_hosts=True,
        bundle=bundle,
    )


DECISION_CASES = [
    pytest.param(StoredState(), NOW, (True, True), id="empty-secret-issues-both"),
    pytest.param(good(ca=None, serving=SERVING_OK), NOW, (True, True), id="ca-key-unusable"),
    pytest.param(
        good(ca=validity(-20, -1), serving=SERVING_OK),
        NOW,
        (True, True),
        id="ca-expired-issues-both",
    ),
    pytest.param(
        good(ca=validity(-2500, 1150), serving=SERVING_OK),
        NOW,
        (True, False),
        id="ca-renewal-due-keeps-usable-serving",
    ),
    pytest.param(
        good(ca=validity(-2500, 1150), serving=validity(-400, -35)),
        NOW,
        (True, True),
        id="ca-renewal-due-and-serving-expired",
    ),
    pytest.param(
        StoredState(ca=CA_OK, serving=None), NOW, (False, True), id="no-serving-certificate"
    ),
    pytest.param(
        good(ca=CA_OK, serving=validity(-400, -35)),
        NOW,
        (False, True),
        id="serving-expired",
    ),
    pytest.param(
        StoredState(
            ca=CA_OK, serving=SERVING_OK, serving_signed_by_ca=True, serving_covers_hosts=False
        ),
        NOW,
        (False, True),
        id="serving-misses-a-service-name",
    ),
    pytest.param(
        StoredState(
            ca=validity(9, 3659),
            serving=SERVING_OK,
            serving_signed_by_ca=False,
            serving_covers_hosts=True,
        ),
        NOW,
        (False, True),
        id="serving-from-previous-ca-after-settling",
    ),
    pytest.param(
        StoredState(
            ca=Validity(NOW - dt.timedelta(minutes=5), NOW + 3650 * DAY),
            serving=SERVING_OK,
            serving_signed_by_ca=False,
            serving_covers_hosts=True,
        ),
        NOW,
        (False, False),
        id="serving-from-previous-ca-while-new-ca-settles",
    ),
    pytest.param(
        good(ca=CA_OK, serving=validity(0, 12)),
        T0 + 8 * DAY,
        (False, True),
        id="serving-renewal-due",
    ),
    pytest.param(good(ca=CA_OK, serving=SERVING_OK), NOW, (False, False), id="ok"),
    pytest.param(
        good(CA_OK, SERVING_OK, bundle=(CA_OK, validity(-100, -1))),
        NOW,
        (False, False),
        id="expired-ca-only-pruned",
    ),
]


@pytest.mark.parametrize(("state", "now", "expected"), DECISION_CASES)
def test_decides_what_to_issue(
    state: StoredState, now: dt.datetime, expected: tuple[bool, bool]
) -> None:
    decision = decide(state, now)
    assert (decision.new_ca, decision.new_serving) == expected
    assert decision.reason


def test_decision_without_changes_reports_none() -> None:
    assert not Decision(False, False, "up to date").changes
    assert Decision(False, True, "x").changes
    assert decide(good(CA_OK, SERVING_OK, bundle=(validity(-9, -1),)), NOW).prune


def test_ca_bundle_keeps_unexpired_cas_newest_first_without_duplicates() -> None:
    new = BundledCA(b"new", validity(9, 3659))
    old = BundledCA(b"old", validity(-2500, 1150))
    gone = BundledCA(b"gone", validity(-4000, -1))
    assert ca_bundle([new, old, gone, old], NOW) == [new, old]


@pytest.mark.parametrize(
    ("cert_days", "ca", "expected"),
    [
        pytest.param(365, validity(0, 3650), 365, id="ca-outlives"),
        pytest.param(365, validity(0, 110), 100, id="clamped-to-ca-expiry"),
        pytest.param(365, validity(0, 10), 1, id="at-least-one-day"),
    ],
)
def test_serving_lifetime_never_passes_the_ca(cert_days: int, ca: Validity, expected: int) -> None:
    assert serving_days(cert_days, ca, NOW) == expected


def test_parse_treats_garbage_as_missing() -> None:
    material = selfcerts.Material.from_secret_data(
        {"ca.crt": "%%%", "ca.key": base64.b64encode(b"nope").decode(), "tls.crt": ""}
    )
    parsed = selfcerts.parse_material(material, HOSTS)
    assert parsed.state == StoredState()  # nothing usable, nothing in the bundle
    assert parsed.cas == []


def test_ca_bundle_patch_sets_every_webhook_guarded_by_name() -> None:
    config = {
        "webhooks": [
            {"name": "a", "clientConfig": {"caBundle": "QUJD"}},
            {"name": "b", "clientConfig": {}},
        ]
    }
    assert selfcerts.ca_bundle_patch(config, "QUJD") == [
        {"op": "test", "path": "/webhooks/1/name", "value": "b"},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "QUJD"},
    ]


def test_rejects_impossible_lifetimes(tmp_path: Path, fake_api: Any) -> None:
    with pytest.raises(ValueError, match="cert_days"):
        certs_for(fake_api, tmp_path, FakeClock(T0), ca_days=10, cert_days=10)
    with pytest.raises(ValueError, match="dns_names"):
        SelfManagedCerts(fake_api, NAMESPACE, SECRET, [], tmp_path, MUTATING, VALIDATING)


# ----- the shell against an in-memory API -------------------------------------------------------


class FakeClock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, delta: dt.timedelta) -> None:
        self.now += delta


def certs_for(
    api: Any, cert_dir: Path, clock: FakeClock, *, ca_days: int = 3650, cert_days: int = 365
) -> SelfManagedCerts:
    return SelfManagedCerts(
        api,
        NAMESPACE,
        SECRET,
        HOSTS,
        cert_dir,
        MUTATING,
        VALIDATING,
        clock=clock,
        ca_days=ca_days,
        cert_days=cert_days,
    )


def webhook_config(kind: str, name: str, webhook_names: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {"name": n, "clientConfig": {"service": {"name": "vcjob-webhook"}}}
            for n in webhook_names
        ],
    }


@pytest.fixture
def cluster(fake_api: Any) -> Any:
    """What the chart creates: an empty TLS Secret, two configurations without caBundle."""
    fake_api.add(
        SECRET_PATH,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": SECRET, "namespace": NAMESPACE},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
        },
    )
    fake_api.add(
        MUTATING_PATH,
        webhook_config("MutatingWebhookConfiguration", MUTATING, ["mutatejob.vcjob.volcano.sh"]),
    )
    fake_api.add(
        VALIDATING_PATH,
        webhook_config(
            "ValidatingWebhookConfiguration", VALIDATING, ["validatejob.vcjob.volcano.sh", "extra"]
        ),
    )
    return fake_api


def secret_bytes(api: Any, key: str) -> bytes:
    return base64.b64decode(api.get(SECRET_PATH)["data"][key])


def ca_bundles(api: Any) -> list[bytes]:
    return [
        base64.b64decode(webhook["clientConfig"]["caBundle"])
        for path in (MUTATING_PATH, VALIDATING_PATH)
        for webhook in api.get(path)["webhooks"]
    ]


def test_ensure_fills_secret_files_and_ca_bundles(cluster: Any, tmp_path: Path) -> None:
    certs = certs_for(cluster, tmp_path / "certs", FakeClock(T0))
    certs.ensure()

    secret = cluster.get(SECRET_PATH)
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    assert certs.cert_file.read_bytes() == secret_bytes(cluster, "tls.crt")
    assert certs.key_file.read_bytes() == secret_bytes(cluster, "tls.key")
    assert certs.key_file.stat().st_mode & 0o777 == 0o600
    ca_pem = secret_bytes(cluster, "ca.crt")
    assert ca_bundles(cluster) == [ca_pem, ca_pem, ca_pem]

    serving = x509.load_pem_x509_certificate(certs.cert_file.read_bytes())
    serving.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))
    san = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == set(HOSTS)


def test_ensure_is_idempotent(cluster: Any, tmp_path: Path) -> None:
    certs = certs_for(cluster, tmp_path, FakeClock(T0))
    certs.ensure()
    writes = len([c for c in cluster.calls if c[0] != "GET"])
    certs.ensure()
    assert len([c for c in cluster.calls if c[0] != "GET"]) == writes


def test_two_replicas_race_and_the_first_write_wins(cluster: Any, tmp_path: Path) -> None:
    first = certs_for(cluster, tmp_path / "a", FakeClock(T0))
    second = certs_for(cluster, tmp_path / "b", FakeClock(T0))
    # The second replica has read the empty Secret; the first stores its pair before it writes.
    cluster.before_write = first.ensure
    second.ensure()

    stored = secret_bytes(cluster, "tls.crt")
    assert first.cert_file.read_bytes() == stored
    assert second.cert_file.read_bytes() == stored
    assert second.key_file.read_bytes() == first.key_file.read_bytes()
    assert ("PUT", SECRET_PATH) in cluster.calls
    assert len(set(ca_bundles(cluster))) == 1


def test_second_instance_reuses_the_stored_certificate(cluster: Any, tmp_path: Path) -> None:
    certs_for(cluster, tmp_path / "a", FakeClock(T0)).ensure()
    stored_rv = cluster.get(SECRET_PATH)["metadata"]["resourceVersion"]
    later = certs_for(cluster, tmp_path / "b", FakeClock(T0 + 30 * DAY))
    later.ensure()
    assert cluster.get(SECRET_PATH)["metadata"]["resourceVersion"] == stored_rv
    assert later.cert_file.read_bytes() == secret_bytes(cluster, "tls.crt")


def test_creates_the_secret_when_it_does_not_exist(fake_api: Any, tmp_path: Path) -> None:
    certs_for(fake_api, tmp_path, FakeClock(T0)).ensure()
    assert fake_api.get(SECRET_PATH)["type"] == "kubernetes.io/tls"
    assert ("POST", f"/api/v1/namespaces/{NAMESPACE}/secrets") in fake_api.calls


def test_serving_certificate_is_renewed_at_two_thirds_with_the_same_ca(
    cluster: Any, tmp_path: Path
) -> None:
    clock = FakeClock(T0)
    certs = certs_for(cluster, tmp_path, clock, ca_days=3650, cert_days=30)
    certs.ensure()
    first_cert, ca_pem = certs.cert_file.read_bytes(), secret_bytes(cluster, "ca.crt")

    clock.advance(19 * DAY)
    certs.ensure()
    assert certs.cert_file.read_bytes() == first_cert

    clock.advance(1 * DAY + dt.timedelta(hours=1))
    certs.ensure()
    assert certs.cert_file.read_bytes() != first_cert
    assert secret_bytes(cluster, "ca.crt") == ca_pem
    renewed = x509.load_pem_x509_certificate(certs.cert_file.read_bytes())
    renewed.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))


def test_ca_rotation_publishes_both_cas_before_serving_from_the_new_one(
    cluster: Any, tmp_path: Path
) -> None:
    clock = FakeClock(T0)
    certs = certs_for(cluster, tmp_path, clock, ca_days=30, cert_days=25)
    certs.ensure()
    old_ca = secret_bytes(cluster, "ca.crt")
    old_serving = certs.cert_file.read_bytes()

    # 2/3 of the CA's life: a new CA joins the bundle; the old serving pair is still served.
    clock.advance(dt.timedelta(days=20, hours=1))
    certs.ensure()
    bundle = x509.load_pem_x509_certificates(secret_bytes(cluster, "ca.crt"))
    assert len(bundle) == 2
    new_ca = bundle[0]
    assert bundle[1] == x509.load_pem_x509_certificate(old_ca)
    assert all(len(x509.load_pem_x509_certificates(b)) == 2 for b in ca_bundles(cluster))
    assert certs.cert_file.read_bytes() == old_serving

    # Still settling a minute later; after the settle time the serving pair moves to the new CA.
    clock.advance(dt.timedelta(minutes=1))
    certs.ensure()
    assert certs.cert_file.read_bytes() == old_serving
    clock.advance(selfcerts.CA_SETTLE)
    certs.ensure()
    serving = x509.load_pem_x509_certificate(certs.cert_file.read_bytes())
    serving.verify_directly_issued_by(new_ca)
    assert len(x509.load_pem_x509_certificates(secret_bytes(cluster, "ca.crt"))) == 2

    # Once the old CA has expired it leaves the bundle.
    clock.advance(dt.timedelta(days=10))
    certs.ensure()
    assert x509.load_pem_x509_certificates(secret_bytes(cluster, "ca.crt")) == [new_ca]


def test_missing_webhook_configuration_is_not_fatal(fake_api: Any, tmp_path: Path) -> None:
    certs = certs_for(fake_api, tmp_path, FakeClock(T0))
    certs.ensure()
    assert certs.cert_file.exists()


def test_run_retries_after_errors_until_stopped(cluster: Any, tmp_path: Path) -> None:
    certs = SelfManagedCerts(
        cluster, NAMESPACE, SECRET, HOSTS, tmp_path, MUTATING, VALIDATING, resync_seconds=0.01
    )
    cluster.fail_next = [500]
    stop = threading.Event()
    worker = threading.Thread(target=certs.run, args=(stop,), daemon=True)
    worker.start()
    try:
        for _ in range(500):
            if certs.cert_file.exists():
                break
            stop.wait(0.01)
    finally:
        stop.set()
        worker.join(5)
    assert not worker.is_alive()
    assert certs.cert_file.exists()


def test_issued_material_is_what_certgen_loads(cluster: Any, tmp_path: Path) -> None:
    certs_for(cluster, tmp_path, FakeClock(T0)).ensure()
    pair = certgen.KeyPair(secret_bytes(cluster, "tls.crt"), secret_bytes(cluster, "tls.key"))
    assert pair.certificate.not_valid_after_utc > T0
