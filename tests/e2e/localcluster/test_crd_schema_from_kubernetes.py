"""The CRDs' pod templates are the PodTemplateSpec of the Kubernetes the local cluster runs, field
for field, and `kubectl explain` describes every field; `kubectl get cronvj` prints Kubernetes'
CronJob columns. The reference is the running kube-apiserver's own `/openapi/v3`, so the test
fails as soon as the control plane moves to a Kubernetes whose pod template differs from the one
`make kubeschema` generated the CRDs from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import kubebin
from localcluster.running import LocalCluster, running_cluster
from shared import kubeschema

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
# The CRDs come from the pinned release's pod template; the manual lane of another release
# (docs/kubernetes-versions.md) runs a kube-apiserver whose template differs on purpose.
same_release = pytest.mark.skipif(
    kubeschema.kubernetes_version() != kubebin.KUBERNETES_VERSION,
    reason=f"the CRDs come from {kubeschema.kubernetes_version()}, the cluster runs "
    f"{kubebin.KUBERNETES_VERSION}",
)

Schema = dict[str, Any]
COMPONENTS = "#/components/schemas/"
# A CRD embeds ObjectMeta as controller-gen does: these five fields only.
EMBEDDED_META_FIELDS = {"annotations", "finalizers", "labels", "name", "namespace"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    workdir = tmp_path_factory.mktemp("crd-schema") / "cluster"
    with running_cluster(workdir, simulator=False, webhook=False) as running:
        yield running


def _upstream_paths(schemas: dict[str, Schema], node: Schema, path: str, out: set[str]) -> None:
    """Field paths below `node` of kube-apiserver's OpenAPI v3 (`$ref`s and `allOf` followed)."""
    wrapped = node.get("allOf")
    if isinstance(wrapped, list) and len(wrapped) == 1:
        node = wrapped[0]
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix(COMPONENTS)
        if name in (kubeschema.QUANTITY, "io.k8s.apimachinery.pkg.util.intstr.IntOrString"):
            return
        node = schemas[name]
        if name == kubeschema.OBJECT_META:
            node = {
                "properties": {
                    k: v for k, v in node["properties"].items() if k in EMBEDDED_META_FIELDS
                }
            }
    for name, child in (node.get("properties") or {}).items():
        out.add(f"{path}.{name}")
        _upstream_paths(schemas, child, f"{path}.{name}", out)
    if isinstance(node.get("items"), dict):
        _upstream_paths(schemas, node["items"], f"{path}[]", out)
    if isinstance(node.get("additionalProperties"), dict):
        _upstream_paths(schemas, node["additionalProperties"], f"{path}{{}}", out)


def _crd_paths(node: Schema, path: str, out: set[str]) -> None:
    for name, child in (node.get("properties") or {}).items():
        out.add(f"{path}.{name}")
        _crd_paths(child, f"{path}.{name}", out)
    if isinstance(node.get("items"), dict):
        _crd_paths(node["items"], f"{path}[]", out)
    if isinstance(node.get("additionalProperties"), dict):
        _crd_paths(node["additionalProperties"], f"{path}{{}}", out)


def _served_schema(cluster: LocalCluster, crd: str) -> Schema:
    served = json.loads(cluster.kubectl("get", "crd", crd, "-o", "json").stdout)
    schema: Schema = served["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _task_template(spec: Schema) -> Schema:
    template: Schema = spec["properties"]["tasks"]["items"]["properties"]["template"]
    return template


@same_release
def test_the_cluster_runs_the_kubernetes_the_schema_comes_from(cluster: LocalCluster) -> None:
    version = json.loads(cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert version["gitVersion"] == kubeschema.kubernetes_version()


@same_release
def test_pod_templates_are_kube_apiservers_pod_template_spec(cluster: LocalCluster) -> None:
    document = json.loads(cluster.kubectl("get", "--raw", "/openapi/v3/api/v1").stdout)
    schemas = document["components"]["schemas"]
    expected: set[str] = set()
    _upstream_paths(schemas, schemas[kubeschema.POD_TEMPLATE_SPEC], "", expected)
    assert len(expected) > 1000
    job_spec = _served_schema(cluster, "jobs.batch.volcano.sh")["properties"]["spec"]
    cron_spec = _served_schema(cluster, "cronjobs.batch.volcano.sh")["properties"]["spec"]
    job_template_spec = cron_spec["properties"]["jobTemplate"]["properties"]["spec"]
    for where, spec in (("Job", job_spec), ("CronJob", job_template_spec)):
        found: set[str] = set()
        _crd_paths(_task_template(spec), "", found)
        missing, unknown = sorted(expected - found), sorted(found - expected)
        assert (missing, unknown) == ([], []), (
            f"{where}: the pod template differs from kube-apiserver's PodTemplateSpec: "
            "run `make kubeschema crds`"
        )
    # The volume claim is PersistentVolumeClaimSpec of the same version.
    claim: set[str] = set()
    _upstream_paths(schemas, schemas[kubeschema.PVC_SPEC], "", claim)
    volume = job_spec["properties"]["volumes"]["items"]["properties"]["volumeClaim"]
    found_claim: set[str] = set()
    _crd_paths(volume, "", found_claim)
    assert found_claim == claim


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ("vcjob", "A Volcano batch Job"),
        ("vcjob.spec.tasks.replicas", "The number of pods of the task."),
        ("vcjob.spec.tasks.template.spec.containers.resources", "Compute Resources required"),
        ("cronvj.spec.schedule", "When to create a Job"),
        ("queue.spec.weight", "share of the cluster"),
        ("pg.spec.minMember", "gang size"),
    ],
)
def test_kubectl_explain_describes_fields(cluster: LocalCluster, field: str, words: str) -> None:
    explained = cluster.kubectl("explain", field).stdout
    assert words in " ".join(explained.split()), explained
    assert "<no description>" not in explained


def test_kubectl_get_cronvj_has_kubernetes_cronjob_columns(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cron = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {
            "schedule": "0 3 * * *",
            "suspend": True,
            "jobTemplate": {
                "spec": {
                    "tasks": [
                        {
                            "name": "t",
                            "replicas": 1,
                            "template": {
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}
                            },
                        }
                    ]
                }
            },
        },
    }
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(cron))
    header, row = cluster.kubectl("get", "cronvj", "nightly").stdout.splitlines()
    assert header.split() == ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert row.split()[:5] == ["nightly", "0", "3", "*", "*"]
    assert "true" in row.split()
    wide = cluster.kubectl("get", "cronvj", "nightly", "-o", "wide").stdout.splitlines()[0]
    assert "TIMEZONE" in wide.split()
