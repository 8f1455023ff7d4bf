"""`helm install vcjob charts/vcjob -n vcjob-system --create-namespace` into the local control
plane, then upgrade and uninstall. The Deployments' pods never run here (no kubelet runs images),
so the checks are on the objects; the webhook's self-managed certificates are driven directly."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest

from localcluster.running import LocalCluster
from localcluster.tools import PROJECT_ROOT
from shared import certgen
from tests.support.polling import wait_until
from webhook.selfcerts import SelfManagedCerts, service_dns_names

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHART = str(PROJECT_ROOT / "charts" / "vcjob")
NAMESPACE = "vcjob-system"
CRDS = [
    "jobs.batch.volcano.sh",
    "commands.bus.volcano.sh",
    "podgroups.scheduling.volcano.sh",
    "queues.scheduling.volcano.sh",
    "cronjobs.batch.volcano.sh",
    "hypernodes.topology.volcano.sh",
    "jobflows.flow.volcano.sh",
    "jobtemplates.flow.volcano.sh",
]
MUTATING = "vcjob-mutating-webhook"
VALIDATING = "vcjob-validating-webhook"


def get(cluster: LocalCluster, *args: str) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl("get", *args, "-o", "json").stdout))


def exists(cluster: LocalCluster, *args: str) -> bool:
    return cluster.kubectl("get", *args, check=False).returncode == 0


def make_fresh(cluster: LocalCluster) -> None:
    """The local cluster pre-applies the CRDs and the default Queue; a new cluster has neither."""
    cluster.kubectl("delete", "queue", "--all")
    cluster.kubectl("delete", "crd", "--wait=false", *CRDS)
    wait_until("the CRDs deleted", lambda: crds_gone(cluster), timeout=180, interval=1.0)


def crds_gone(cluster: LocalCluster) -> bool:
    """Whether every CRD is gone. kube-apiserver's CRD finalizer fails with "storage is
    (re)initializing" on a CRD deleted before its watch cache is ready (a cluster just started on a
    loaded machine) and may not come back to it: a touch of each remaining CRD requeues it."""
    served = set(cluster.kubectl("get", "crd", "-o", "name").stdout.split())
    left = [c for c in CRDS if f"customresourcedefinition.apiextensions.k8s.io/{c}" in served]
    if left:
        touch = f"test.vcjob.io/touched={time.monotonic_ns()}"
        cluster.kubectl("annotate", "--overwrite", "crd", *left, touch, check=False)
    return not left


def test_install_upgrade_uninstall(cluster: LocalCluster, helm: Any, tmp_path: Path) -> None:
    make_fresh(cluster)
    installed = helm("install", "vcjob", CHART, "-n", NAMESPACE, "--create-namespace")
    assert "helm test vcjob -n vcjob-system" in installed.stdout  # NOTES.txt
    # kube-apiserver warns about an empty kubernetes.io/tls Secret (Go's tls.X509KeyPair): the
    # placeholder the webhook fills is Opaque.
    assert "PEM data" not in installed.stderr, installed.stderr
    assert get(cluster, "-n", NAMESPACE, "secret", "vcjob-webhook-tls")["type"] == "Opaque"

    for crd in CRDS:
        annotations = get(cluster, "crd", crd)["metadata"]["annotations"]
        assert annotations["helm.sh/resource-policy"] == "keep"
    # No chart pod runs here: the `default` Queue is the controller's to create (a hook could
    # run before kube-apiserver serves the Queue CRD the install just created), with these args.
    assert not exists(cluster, "queue", "default")
    controller = get(cluster, "-n", NAMESPACE, "deployment", "vcjob-controller")
    args = controller["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--default-queue-weight") + 1] == "1"
    assert "--default-queue-reclaimable" in args
    mutating = get(cluster, "mutatingwebhookconfiguration", MUTATING)
    validating = get(cluster, "validatingwebhookconfiguration", VALIDATING)
    assert mutating["webhooks"][0]["name"] == "mutatejob.vcjob.volcano.sh"
    assert validating["webhooks"][0]["name"] == "validatejob.vcjob.volcano.sh"
    for kind_name in [
        "deployment/vcjob-webhook",
        "deployment/vcjob-controller",
        "service/vcjob-webhook",
        "service/vcjob-webhook-metrics",
        "service/vcjob-controller-metrics",
        "serviceaccount/vcjob-webhook",
        "serviceaccount/vcjob-controller",
        "secret/vcjob-webhook-tls",
        "role/vcjob-webhook",
        "rolebinding/vcjob-webhook",
        "role/vcjob-controller-leader-election",
        "poddisruptionbudget/vcjob-webhook",
    ]:
        assert exists(cluster, "-n", NAMESPACE, kind_name), kind_name
    for name in ["vcjob-webhook", "vcjob-controller", "vcjob-editor", "vcjob-viewer"]:
        assert exists(cluster, "clusterrole", name), name
    service = get(cluster, "-n", NAMESPACE, "service", "vcjob-webhook")
    assert service["spec"]["ports"][0]["port"] == 443

    # What a webhook pod does at start in self mode, with the chart's names.
    certs = SelfManagedCerts(
        cluster.api_client(),
        NAMESPACE,
        "vcjob-webhook-tls",
        service_dns_names("vcjob-webhook", NAMESPACE),
        tmp_path / "certs",
        MUTATING,
        VALIDATING,
    )
    certs.ensure()
    secret = get(cluster, "-n", NAMESPACE, "secret", "vcjob-webhook-tls")
    bundle = secret["data"]["ca.crt"]

    assert base64.b64decode(bundle) == certs.ca_file.read_bytes()

    # An upgrade keeps the issued certificates (the chart carries the Secret's data forward).
    helm("upgrade", "vcjob", CHART, "-n", NAMESPACE, "--set", "webhook.timeoutSeconds=7")
    upgraded = get(cluster, "-n", NAMESPACE, "secret", "vcjob-webhook-tls")
    assert upgraded["data"] == secret["data"]
    for kind, name in [
        ("mutatingwebhookconfiguration", MUTATING),
        ("validatingwebhookconfiguration", VALIDATING),
    ]:
        assert get(cluster, kind, name)["webhooks"][0]["timeoutSeconds"] == 7

    helm("uninstall", "vcjob", "-n", NAMESPACE)
    assert not exists(cluster, "mutatingwebhookconfiguration", MUTATING)
    assert not exists(cluster, "validatingwebhookconfiguration", VALIDATING)
    assert not exists(cluster, "-n", NAMESPACE, "deployment", "vcjob-webhook")
    assert not exists(cluster, "clusterrole", "vcjob-webhook")
    for crd in CRDS:
        assert exists(cluster, "crd", crd), f"{crd} must survive uninstall (crds.keep)"


def test_an_upgrade_keeps_the_type_of_a_kubernetes_io_tls_secret(
    cluster: LocalCluster, helm: Any
) -> None:
    """Releases installed by earlier charts hold a kubernetes.io/tls Secret; a Secret's type is
    immutable, so the chart keeps the type it finds instead of failing the upgrade."""
    namespace, release = "vcjob-tlstype", "tlstype"
    options = ["--set", "crds.enabled=false", "--set", "queue.createDefault=false"]
    helm("install", release, CHART, "-n", namespace, "--create-namespace", *options)
    try:
        name = "tlstype-vcjob-webhook-tls"
        secret = get(cluster, "-n", namespace, "secret", name)
        pair = certgen.issue([f"tlstype-vcjob-webhook.{namespace}.svc"]).serving
        secret["type"] = "kubernetes.io/tls"
        secret["data"] = {
            "tls.crt": base64.b64encode(pair.cert_pem).decode(),
            "tls.key": base64.b64encode(pair.key_pem).decode(),
        }
        for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            secret["metadata"].pop(key, None)
        cluster.kubectl("delete", "secret", name, "-n", namespace)
        cluster.kubectl("create", "-f", "-", input=json.dumps(secret))
        upgraded = helm("upgrade", release, CHART, "-n", namespace, *options)
        assert "PEM data" not in upgraded.stderr, upgraded.stderr
        kept = get(cluster, "-n", namespace, "secret", name)
        assert (kept["type"], kept["data"]) == ("kubernetes.io/tls", secret["data"])
    finally:
        helm("uninstall", release, "-n", namespace)


def test_an_existing_default_queue_is_left_as_it_is(cluster: LocalCluster, helm: Any) -> None:
    """Volcano's `default` Queue, or one an earlier install kept, is neither replaced nor reset
    by the install (the controller, too, only creates one that is missing)."""
    if not exists(cluster, "queue", "default"):
        cluster.kubectl("create", "-f", "-", input=QUEUE)
    cluster.kubectl("patch", "queue", "default", "--type", "merge", "-p", '{"spec":{"weight":7}}')
    before = get(cluster, "queue", "default")
    options = ["--set", "crds.enabled=false", "--set", "rbac.userRoles=false"]
    helm("install", "keepq", CHART, "-n", "vcjob-keepq", "--create-namespace", *options)
    try:
        after = get(cluster, "queue", "default")
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert after["spec"]["weight"] == 7
    finally:
        helm("uninstall", "keepq", "-n", "vcjob-keepq")


QUEUE = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: default
spec:
  weight: 1
"""


def test_upgrade_keeps_the_patched_ca_bundle(
    cluster: LocalCluster, helm: Any, tmp_path: Path
) -> None:
    """caBundle is not in the chart; a three-way merge on upgrade must leave the patched value."""
    namespace, prefix = "vcjob-upgrade", "upgrade-vcjob"
    # The CRDs, the default Queue and the user roles already exist and belong to another release.
    options = ["--set", "crds.enabled=false", "--set", "queue.createDefault=false"]
    options += ["--set", "rbac.userRoles=false"]
    helm("install", "upgrade", CHART, "-n", namespace, "--create-namespace", *options)
    SelfManagedCerts(
        cluster.api_client(),
        namespace,
        f"{prefix}-webhook-tls",
        service_dns_names(f"{prefix}-webhook", namespace),
        tmp_path / "certs",
        f"{prefix}-mutating-webhook",
        f"{prefix}-validating-webhook",
    ).ensure()
    bundle = get(cluster, "-n", namespace, "secret", f"{prefix}-webhook-tls")["data"]["ca.crt"]

    helm(
        "upgrade", "upgrade", CHART, "-n", namespace, *options, "--set", "webhook.timeoutSeconds=9"
    )
    try:
        for kind in ["mutatingwebhookconfiguration", "validatingwebhookconfiguration"]:
            name = f"{prefix}-{kind.removesuffix('webhookconfiguration')}-webhook"
            webhook = get(cluster, kind, name)["webhooks"][0]
            assert webhook["timeoutSeconds"] == 9
            assert webhook["clientConfig"]["caBundle"] == bundle
    finally:
        helm("uninstall", "upgrade", "-n", namespace)


def test_rendered_chart_is_accepted_by_the_api_server(
    cluster: LocalCluster, helm: Any, tmp_path: Path
) -> None:
    """Every object of the chart (hooks aside) is accepted by the API server as rendered, and the
    webhook's self-managed certificates work with the chart's Secret and configurations. A second
    release name keeps these objects apart from the installed release's."""
    namespace, prefix = "vcjob-render", "render-vcjob"
    # The CRDs are served already (and another release owns them).
    options = ["-n", namespace, "--set", "rbac.userRoles=false", "--set", "crds.enabled=false"]
    rendered = helm("template", "render", CHART, *options, "--no-hooks").stdout
    cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("apply", "--server-side", "--field-manager", "helm", "-f", "-", input=rendered)
    for kind_name in [
        f"deployment/{prefix}-webhook",
        f"deployment/{prefix}-controller",
        f"service/{prefix}-webhook",
        f"secret/{prefix}-webhook-tls",
        f"role/{prefix}-webhook",
        f"poddisruptionbudget/{prefix}-webhook",
    ]:
        assert exists(cluster, "-n", namespace, kind_name), kind_name

    certs = SelfManagedCerts(
        cluster.api_client(),
        namespace,
        f"{prefix}-webhook-tls",
        service_dns_names(f"{prefix}-webhook", namespace),
        tmp_path / "certs",
        f"{prefix}-mutating-webhook",
        f"{prefix}-validating-webhook",
    )
    certs.ensure()
    bundle = get(cluster, "-n", namespace, "secret", f"{prefix}-webhook-tls")["data"]["ca.crt"]
    for kind in ["mutatingwebhookconfiguration", "validatingwebhookconfiguration"]:
        name = f"{prefix}-{kind.removesuffix('webhookconfiguration')}-webhook"
        assert get(cluster, kind, name)["webhooks"][0]["clientConfig"]["caBundle"] == bundle
    # Its webhooks fail closed and nothing serves them: leave no trace for later tests.
    cluster.kubectl("delete", "--wait=false", "-f", "-", input=rendered)
