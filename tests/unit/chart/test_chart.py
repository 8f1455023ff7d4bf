"""The Helm chart, rendered by the real helm: lint, Kubernetes schemas, the values schema, fail
guards, and the properties the install relies on (scoping, RBAC, security, certificates)."""

from __future__ import annotations

import base64
import functools
import gzip
import json
import subprocess
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from localcluster.tools import PROJECT_ROOT, tool_path

CHART = PROJECT_ROOT / "charts" / "vcjob"
NAMESPACE = "vcjob-system"
KUBERNETES_VERSION = "1.31.0"
EXTERNAL = (
    "certs.mode=external",
    "certs.secretName=my-webhook-tls",
    "certs.external.caBundle=TUlJQ2FCQ0NBZytnQXdJQkFnSVVjYQ==",
)
CERT_MANAGER = ("certs.mode=certManager",)
MODES = {"self": (), "certManager": CERT_MANAGER, "external": EXTERNAL}

Doc = dict[str, Any]


def helm_template(*sets: str, namespace: str = NAMESPACE) -> subprocess.CompletedProcess[str]:
    helm = tool_path("helm")
    assert helm is not None, "helm is not installed: run `make tools`"
    argv = [str(helm), "template", "vcjob", str(CHART), "--namespace", namespace]
    for item in sets:
        argv += ["--set", item]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


@functools.cache
def render(*sets: str, namespace: str = NAMESPACE) -> tuple[Doc, ...]:
    result = helm_template(*sets, namespace=namespace)
    assert result.returncode == 0, result.stderr
    return tuple(d for d in yaml.safe_load_all(result.stdout) if d)


def render_error(*sets: str) -> str:
    result = helm_template(*sets)
    assert result.returncode != 0, f"helm template accepted {sets}"
    return result.stderr


def find(docs: tuple[Doc, ...], kind: str, name: str | None = None) -> list[Doc]:
    return [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]


def one(docs: tuple[Doc, ...], kind: str, name: str) -> Doc:
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def container(docs: tuple[Doc, ...], deployment: str) -> Doc:
    spec = one(docs, "Deployment", deployment)["spec"]["template"]["spec"]
    assert len(spec["containers"]) == 1
    return dict(spec["containers"][0])


def arg_value(args: list[str], flag: str) -> str:
    assert flag in args, f"{flag} missing from {args}"
    return args[args.index(flag) + 1]


# ----- lint and schemas -------------------------------------------------------------------------


def test_helm_lint_is_clean() -> None:
    helm = tool_path("helm")
    assert helm is not None
    result = subprocess.run(
        [str(helm), "lint", "--strict", str(CHART), "--namespace", NAMESPACE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def crd_schemas() -> dict[tuple[str, str], Doc]:
    """(apiVersion, kind) -> openAPIV3Schema of the chart's own CRDs."""
    schemas = {}
    for path in sorted((CHART / "files" / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


# Foreign custom resources the chart may render; checked structurally (their CRDs are not ours).
FOREIGN_KINDS = {
    ("cert-manager.io/v1", "Certificate"): ("spec", "secretName"),
    ("cert-manager.io/v1", "Issuer"): ("spec",),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ("spec", "endpoints"),
}

EVERYTHING_ON = (
    "networkPolicy.enabled=true",
    "serviceMonitor.enabled=true",
    "controller.replicas=2",
    "controller.disableNetworkPolicy=true",
)


@pytest.mark.parametrize(
    "sets",
    [
        pytest.param(sets, id=mode)
        for mode, sets in [*MODES.items(), ("everything-on", (*CERT_MANAGER, *EVERYTHING_ON))]
    ],
)
def test_every_manifest_matches_its_schema(sets: tuple[str, ...]) -> None:
    ours = crd_schemas()
    docs = render(*sets)
    assert docs
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        where = f"{doc['kind']} {doc['metadata']['name']}"
        if key in ours:
            jsonschema.validate(doc, ours[key])
        elif key in FOREIGN_KINDS:
            node: Any = doc
            for step in FOREIGN_KINDS[key]:
                assert step in node, f"{where}: missing {step}"
                node = node[step]
        else:
            try:
                kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{where}: {err.message} at {list(err.path)}")


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["apiVersion"], chart["name"]) == ("v2", "vcjob")
    assert chart["version"] == "0.1.0"
    assert chart["appVersion"] == "0.1.0"


def test_values_yaml_satisfies_values_schema() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.validate(yaml.safe_load((CHART / "values.yaml").read_text()), schema)


# ----- values.schema.json rejects bad values ----------------------------------------------------

BAD_VALUES = [
    pytest.param("webhook.replicas=0", "webhook.replicas", id="replicas-below-one"),
    pytest.param("controller.replicas=3", "controller.replicas", id="controller-above-two"),
    pytest.param("webhook.replicas=two", "webhook.replicas", id="replicas-not-integer"),
    pytest.param("certs.mode=manual", "certs.mode", id="unknown-certs-mode"),
    pytest.param("webhook.failurePolicy.validate=Never", "failurePolicy", id="bad-failure-policy"),
    pytest.param("webhook.timeoutSeconds=60", "timeoutSeconds", id="timeout-above-30"),
    pytest.param("webhook.logFormat=xml", "logFormat", id="bad-log-format"),
    pytest.param("crds.enabled=maybe", "crds.enabled", id="bool-not-bool"),
    pytest.param("webhok.replicas=2", "webhok", id="unknown-top-level-key"),
    pytest.param("image.pullPolicy=Sometimes", "pullPolicy", id="bad-pull-policy"),
]


@pytest.mark.parametrize(("setting", "named"), BAD_VALUES)
def test_values_schema_rejects_bad_values(setting: str, named: str) -> None:
    stderr = render_error(setting)
    assert "values don't meet the specifications of the schema" in stderr
    assert named.split(".")[-1] in stderr


# ----- fail guards ------------------------------------------------------------------------------

GUARDS = [
    pytest.param(
        ("certs.mode=external", "certs.external.caBundle=QUJD"),
        "certs.mode=external needs certs.secretName",
        id="external-without-secret",
    ),
    pytest.param(
        ("certs.mode=external", "certs.secretName=tls"),
        "certs.mode=external needs certs.external.caBundle",
        id="external-without-ca-bundle",
    ),
    pytest.param(
        ("certs.external.caBundle=QUJD",),
        "only used with certs.mode=external",
        id="ca-bundle-outside-external-mode",
    ),
    pytest.param(
        ("webhook.replicas=1",),
        "must be below webhook.replicas",
        id="pdb-would-block-drains",
    ),
    pytest.param(
        ("tests.namespace=vcjob-system",),
        "is excluded from the webhook",
        id="test-namespace-excluded",
    ),
]


@pytest.mark.parametrize(("sets", "message"), GUARDS)
def test_impossible_combinations_fail_with_a_clear_message(
    sets: tuple[str, ...], message: str
) -> None:
    assert message in render_error(*sets)


def test_single_webhook_replica_renders_without_a_pdb() -> None:
    docs = render("webhook.replicas=1", "webhook.podDisruptionBudget.enabled=false")
    assert not find(docs, "PodDisruptionBudget")


# ----- webhook configurations -------------------------------------------------------------------

CONFIGS = [
    (
        "MutatingWebhookConfiguration",
        "vcjob-mutating-webhook",
        "mutatejob.vcjob.volcano.sh",
        "/mutate-batch-volcano-sh-v1alpha1-job",
        ["CREATE"],
        "Ignore",
    ),
    (
        "ValidatingWebhookConfiguration",
        "vcjob-validating-webhook",
        "validatejob.vcjob.volcano.sh",
        "/validate-batch-volcano-sh-v1alpha1-job",
        ["CREATE", "UPDATE"],
        "Fail",
    ),
]


@pytest.mark.parametrize(
    ("kind", "name", "webhook", "path", "operations", "policy"), CONFIGS, ids=["mutate", "validate"]
)
def test_webhook_configuration_is_scoped_to_jobs_and_cronjobs(
    kind: str, name: str, webhook: str, path: str, operations: list[str], policy: str
) -> None:
    config = one(render(), kind, name)
    hook, cron_hook = config["webhooks"][:2]
    assert cron_hook["name"] == webhook.replace("job.vcjob", "cronjob.vcjob")
    assert cron_hook["rules"][0]["resources"] == ["cronjobs"]
    assert cron_hook["rules"][0]["operations"] == operations
    assert cron_hook["clientConfig"]["service"]["path"] == path.replace("-job", "-cronjob")
    assert cron_hook["failurePolicy"] == policy
    assert hook["name"] == webhook
    assert hook["rules"] == [
        {
            "apiGroups": ["batch.volcano.sh"],
            "apiVersions": ["v1alpha1"],
            "resources": ["jobs"],
            "operations": operations,
            "scope": "Namespaced",
        }
    ]
    assert hook["clientConfig"]["service"] == {
        "name": "vcjob-webhook",
        "namespace": NAMESPACE,
        "path": path,
        "port": 443,
    }
    assert hook["failurePolicy"] == policy
    assert hook["sideEffects"] == "None"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["timeoutSeconds"] == 5
    assert hook["matchPolicy"] == "Equivalent"
    assert "caBundle" not in hook["clientConfig"], "self mode: the webhook patches caBundle in"


OBJECT_HOOKS = {
    # name: (path, resource, group, operations, scope, failure policy)
    "mutatequeue.vcjob.volcano.sh": (
        "/queues/mutate", "queues", "scheduling.volcano.sh", ["CREATE"], "Cluster", "Ignore"
    ),
    "mutatepodgroup.vcjob.volcano.sh": (
        "/podgroups/mutate", "podgroups", "scheduling.volcano.sh", ["CREATE"], "Namespaced",
        "Ignore",
    ),
    "validatequeue.vcjob.volcano.sh": (
        "/queues/validate", "queues", "scheduling.volcano.sh", ["CREATE", "UPDATE", "DELETE"],
        "Cluster", "Ignore",
    ),
    "validatepodgroup.vcjob.volcano.sh": (
        "/podgroups/validate", "podgroups", "scheduling.volcano.sh", ["CREATE"], "Namespaced",
        "Fail",
    ),
    "validatepod.vcjob.volcano.sh": (
        "/pods/validate", "pods", "", ["CREATE"], "Namespaced", "Ignore"
    ),
    "validatehypernode.vcjob.volcano.sh": (
        "/hypernodes/validate", "hypernodes", "topology.volcano.sh", ["CREATE", "UPDATE"],
        "Cluster", "Fail",
    ),
}  # fmt: skip


def _all_hooks(docs: tuple[Doc, ...]) -> dict[str, dict[str, Any]]:
    return {
        hook["name"]: hook
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for config in find(docs, kind)
        for hook in config["webhooks"]
    }


def test_volcanos_other_objects_are_admitted_at_volcanos_paths() -> None:
    hooks = _all_hooks(render())
    for name, (path, resource, group, operations, scope, policy) in OBJECT_HOOKS.items():
        hook = hooks[name]
        assert hook["clientConfig"]["service"]["path"] == path
        (rule,) = hook["rules"]
        assert (rule["resources"], rule["apiGroups"], rule["operations"], rule["scope"]) == (
            [resource],
            [group],
            operations,
            scope,
        ), name
        assert hook["failurePolicy"] == policy, name


def test_the_pod_webhook_cannot_lock_the_cluster_out() -> None:
    hook = _all_hooks(render(namespace="vcjob-ops"))["validatepod.vcjob.volcano.sh"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "vcjob-ops",
        "kube-system",
    ]
    assert hook["objectSelector"] == {
        "matchExpressions": [
            {"key": "app.kubernetes.io/instance", "operator": "NotIn", "values": ["vcjob"]}
        ]
    }


def test_each_object_webhook_can_be_turned_off() -> None:
    docs = render(
        "webhook.objects.queues=false",
        "webhook.objects.podGroups=false",
        "webhook.objects.pods=false",
        "webhook.objects.hyperNodes=false",
    )
    assert not set(OBJECT_HOOKS) & set(_all_hooks(docs))
    rules = one(docs, "ClusterRole", "vcjob-webhook")["rules"]
    assert [
        r["resources"] for r in rules if r["apiGroups"] != ["admissionregistration.k8s.io"]
    ] == [["queues"]]


def test_the_webhook_reads_namespaces_and_lists_podgroups() -> None:
    rules = one(render(), "ClusterRole", "vcjob-webhook")["rules"]
    assert {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]} in rules
    assert {
        "apiGroups": ["scheduling.volcano.sh"],
        "resources": ["podgroups"],
        "verbs": ["list"],
    } in rules


def test_jobflows_and_jobtemplates_are_validated_at_volcanos_paths() -> None:
    config = one(render(), "ValidatingWebhookConfiguration", "vcjob-validating-webhook")
    hooks = {hook["name"]: hook for hook in config["webhooks"]}
    for name, path, resource in (
        ("validatejobflow.vcjob.volcano.sh", "/jobflows/validate", "jobflows"),
        ("validatejobtemplate.vcjob.volcano.sh", "/jobtemplates/validate", "jobtemplates"),
    ):
        hook = hooks[name]
        assert hook["clientConfig"]["service"]["path"] == path
        assert hook["rules"] == [
            {
                "apiGroups": ["flow.volcano.sh"],
                "apiVersions": ["v1alpha1"],
                "resources": [resource],
                "operations": ["CREATE", "UPDATE"],
                "scope": "Namespaced",
            }
        ]


@pytest.mark.parametrize("kind", [c[0] for c in CONFIGS])
def test_webhooks_skip_the_release_namespace(kind: str) -> None:
    docs = render("webhook.excludedNamespaces={kube-system}", namespace="vcjob-ops")
    hooks = [h for h in find(docs, kind)[0]["webhooks"] if "pod." not in h["name"]]
    namespaced = [h for h in hooks if h["rules"][0]["scope"] == "Namespaced"]
    assert len(namespaced) >= 3  # jobs, cronjobs, podgroups; jobflows, jobtemplates
    assert all(h["namespaceSelector"] == hooks[0]["namespaceSelector"] for h in namespaced)
    assert hooks[0]["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["vcjob-ops", "kube-system"],
            }
        ]
    }


def test_failure_policies_are_configurable() -> None:
    docs = render("webhook.failurePolicy.validate=Ignore", "webhook.failurePolicy.mutate=Fail")
    assert find(docs, "ValidatingWebhookConfiguration")[0]["webhooks"][0]["failurePolicy"] == (
        "Ignore"
    )
    assert find(docs, "MutatingWebhookConfiguration")[0]["webhooks"][0]["failurePolicy"] == "Fail"


# ----- certificate modes ------------------------------------------------------------------------


def test_self_mode_precreates_the_secret_and_passes_the_certs_flags() -> None:
    docs = render()
    secret = one(docs, "Secret", "vcjob-webhook-tls")
    # Empty until the webhook fills it: as kubernetes.io/tls, kube-apiserver would warn that it
    # holds no PEM data on every install.
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"tls.crt": "", "tls.key": ""}
    args = container(docs, "vcjob-webhook")["args"]
    assert args[0] == "webhook"
    assert arg_value(args, "--certs-mode") == "self"
    assert arg_value(args, "--certs-secret") == "vcjob-webhook-tls"
    assert arg_value(args, "--certs-namespace") == NAMESPACE
    assert arg_value(args, "--certs-dir") == "/tmp/certs"
    assert arg_value(args, "--service-name") == "vcjob-webhook"
    assert arg_value(args, "--mutating-config") == "vcjob-mutating-webhook"
    assert arg_value(args, "--validating-config") == "vcjob-validating-webhook"
    assert "--tls-cert-file" not in args
    assert not find(docs, "Certificate")


def test_external_mode_mounts_the_secret_and_sets_the_ca_bundle() -> None:
    docs = render(*EXTERNAL)
    assert not find(docs, "Secret"), "the user owns the Secret in external mode"
    webhook = container(docs, "vcjob-webhook")
    assert arg_value(webhook["args"], "--tls-cert-file") == "/etc/vcjob/tls/tls.crt"
    assert arg_value(webhook["args"], "--tls-private-key-file") == "/etc/vcjob/tls/tls.key"
    assert "--certs-mode" not in webhook["args"]
    assert {"name": "tls", "mountPath": "/etc/vcjob/tls", "readOnly": True} in webhook[
        "volumeMounts"
    ]
    volumes = one(docs, "Deployment", "vcjob-webhook")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "tls", "secret": {"secretName": "my-webhook-tls", "defaultMode": 0o440}} in (
        volumes
    )
    for kind, *_ in CONFIGS:
        hook = find(docs, kind)[0]["webhooks"][0]
        assert hook["clientConfig"]["caBundle"] == "TUlJQ2FCQ0NBZytnQXdJQkFnSVVjYQ=="
    # No write access to anything: the webhook only reads queues, namespaces and podgroups.
    role = one(docs, "ClusterRole", "vcjob-webhook")
    assert [r["resources"] for r in role["rules"]] == [["queues"], ["namespaces"], ["podgroups"]]
    assert all(set(r["verbs"]) <= {"get", "list", "watch"} for r in role["rules"])
    assert not find(docs, "Role", "vcjob-webhook")


def test_cert_manager_mode_issues_a_certificate_and_injects_the_ca() -> None:
    docs = render(*CERT_MANAGER)
    cert = one(docs, "Certificate", "vcjob-webhook-serving")
    assert cert["spec"]["secretName"] == "vcjob-webhook-tls"
    assert cert["spec"]["dnsNames"] == [
        "vcjob-webhook",
        f"vcjob-webhook.{NAMESPACE}",
        f"vcjob-webhook.{NAMESPACE}.svc",
        f"vcjob-webhook.{NAMESPACE}.svc.cluster.local",
    ]
    assert cert["spec"]["issuerRef"]["name"] == "vcjob-ca"
    assert one(docs, "Issuer", "vcjob-selfsigned")["spec"] == {"selfSigned": {}}
    assert one(docs, "Certificate", "vcjob-ca")["spec"]["isCA"] is True
    assert one(docs, "Issuer", "vcjob-ca")["spec"] == {"ca": {"secretName": "vcjob-ca"}}
    for kind, *_ in CONFIGS:
        config = find(docs, kind)[0]
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
            f"{NAMESPACE}/vcjob-webhook-serving"
        )
        assert "caBundle" not in config["webhooks"][0]["clientConfig"]
    assert "--tls-cert-file" in container(docs, "vcjob-webhook")["args"]


def test_cert_manager_mode_with_a_named_issuer_creates_no_ca() -> None:
    docs = render(
        *CERT_MANAGER,
        "certs.certManager.issuerRef.name=corp-ca",
        "certs.certManager.issuerRef.kind=ClusterIssuer",
    )
    assert not find(docs, "Issuer")
    (cert,) = find(docs, "Certificate")
    assert cert["spec"]["issuerRef"] == {
        "name": "corp-ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }


# ----- RBAC -------------------------------------------------------------------------------------


def test_webhook_rbac_names_its_secret_and_configurations() -> None:
    docs = render()
    role = one(docs, "Role", "vcjob-webhook")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["vcjob-webhook-tls"],
            "verbs": ["get", "update"],
        }
    ]
    rules = one(docs, "ClusterRole", "vcjob-webhook")["rules"]
    by_resource = {r["resources"][0]: r for r in rules}
    assert by_resource["mutatingwebhookconfigurations"]["resourceNames"] == [
        "vcjob-mutating-webhook"
    ]
    assert by_resource["validatingwebhookconfigurations"]["resourceNames"] == [
        "vcjob-validating-webhook"
    ]
    for resource in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        assert by_resource[resource]["verbs"] == ["get", "patch"]
    assert by_resource["queues"]["verbs"] == ["list", "watch"]
    binding = one(docs, "RoleBinding", "vcjob-webhook")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "vcjob-webhook", "namespace": NAMESPACE}
    ]


def test_no_role_grants_wildcards_or_secret_creation_to_the_webhook() -> None:
    docs = render(*CERT_MANAGER, *EVERYTHING_ON)
    for doc in docs:
        if doc["kind"] not in ("Role", "ClusterRole"):
            continue
        for rule in doc["rules"]:
            assert "*" not in rule["verbs"], doc["metadata"]["name"]
            assert "*" not in rule["resources"], doc["metadata"]["name"]
    for rule in one(render(), "Role", "vcjob-webhook")["rules"]:
        assert "create" not in rule["verbs"]


def verbs(role: Doc, group: str, resource: str) -> set[str]:
    return {
        verb
        for rule in role["rules"]
        if group in rule["apiGroups"] and resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_controller_rbac_covers_what_it_does() -> None:
    docs = render()
    role = one(docs, "ClusterRole", "vcjob-controller")
    # create: the CronJob controller's Jobs.
    assert verbs(role, "batch.volcano.sh", "jobs") == {
        "get",
        "list",
        "watch",
        "patch",
        "delete",
        "create",
    }
    assert verbs(role, "batch.volcano.sh", "jobs/status") == {"update"}
    assert verbs(role, "batch.volcano.sh", "cronjobs") == {"list", "watch"}
    assert verbs(role, "batch.volcano.sh", "cronjobs/status") == {"patch"}
    assert verbs(role, "scheduling.volcano.sh", "queues/status") == {"patch"}
    assert verbs(role, "", "pods") == {"list", "watch", "create", "delete", "patch"}
    assert verbs(role, "bus.volcano.sh", "commands") == {"list", "watch", "delete"}
    assert "create" in verbs(role, "scheduling.volcano.sh", "podgroups")
    # The queue controller keeps Queue states and creates the `default` Queue when missing.
    assert verbs(role, "scheduling.volcano.sh", "queues") == {
        "get",
        "list",
        "watch",
        "patch",
        "create",
    }
    for resource in ("services", "configmaps", "secrets", "persistentvolumeclaims"):
        assert "create" in verbs(role, "", resource), resource
    # The ssh Secret is written by name: the controller reads no Secret.
    assert verbs(role, "", "secrets") == {"create", "update", "delete"}
    assert "create" in verbs(role, "networking.k8s.io", "networkpolicies")
    assert verbs(role, "", "events") == {"create", "patch"}
    assert verbs(role, "events.k8s.io", "events") == set()
    assert verbs(role, "scheduling.k8s.io", "priorityclasses") == {"list", "watch"}
    assert verbs(role, "", "nodes") == {"list"}
    # The JobFlow controller: flows and templates read (a flow once more before its Jobs are
    # created), their status written.
    assert verbs(role, "flow.volcano.sh", "jobflows") == {"get", "list", "watch"}
    assert verbs(role, "flow.volcano.sh", "jobtemplates") == {"list", "watch"}
    for resource in ("jobflows", "jobtemplates"):
        assert verbs(role, "flow.volcano.sh", f"{resource}/status") == {"update"}
    # The PodGroup controller watches plain workloads for their annotations and replicas.
    for resource in ("replicasets", "statefulsets", "daemonsets"):
        assert verbs(role, "apps", resource) == {"list", "watch"}, resource
    assert verbs(role, "batch", "jobs") == {"list", "watch"}
    leases = one(docs, "Role", "vcjob-controller-leader-election")
    assert leases["metadata"]["namespace"] == NAMESPACE
    assert verbs(leases, "coordination.k8s.io", "leases") == {"get", "create", "update"}
    named = [r for r in leases["rules"] if "resourceNames" in r]
    assert named == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["vcjob-controller"],
            "verbs": ["get", "update"],
        }
    ]


def test_user_roles_aggregate_into_the_builtin_roles() -> None:
    docs = render()
    editor = one(docs, "ClusterRole", "vcjob-editor")
    viewer = one(docs, "ClusterRole", "vcjob-viewer")
    assert editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert viewer["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert "create" in verbs(editor, "batch.volcano.sh", "jobs")
    assert verbs(viewer, "batch.volcano.sh", "jobs") == {"get", "list", "watch"}


# ----- Deployments ------------------------------------------------------------------------------


@pytest.mark.parametrize("deployment", ["vcjob-webhook", "vcjob-controller"])
def test_pods_run_locked_down(deployment: str) -> None:
    docs = render()
    pod = one(docs, "Deployment", deployment)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    main = container(docs, deployment)
    security = main["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"} in main["env"]
    assert {"name": "tmp", "mountPath": "/tmp"} in main["volumeMounts"]
    assert main["image"] == "ghcr.io/vcjob/vcjob:0.1.0"
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    ports = {p["name"]: p["containerPort"] for p in main["ports"]}
    assert ports["health"] == 8081
    assert ports["metrics"] == 8080


def test_webhook_deployment_is_highly_available() -> None:
    docs = render()
    deployment = one(docs, "Deployment", "vcjob-webhook")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    assert one(docs, "PodDisruptionBudget", "vcjob-webhook")["spec"]["minAvailable"] == 1
    main = container(docs, "vcjob-webhook")
    assert {p["name"]: p["containerPort"] for p in main["ports"]}["webhook"] == 9443
    args = main["args"]
    assert arg_value(args, "--port") == "9443"
    assert arg_value(args, "--health-port") == "8081"
    assert arg_value(args, "--metrics-port") == "8080"
    assert arg_value(args, "--scheduler-name") == "volcano"
    assert arg_value(args, "--queue-check") == "on"
    service = one(docs, "Service", "vcjob-webhook")
    # The API server calls 443; the container's own 9443 is there for `kubectl port-forward`.
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "targetPort": "webhook", "protocol": "TCP"},
        {"name": "webhook", "port": 9443, "targetPort": "webhook", "protocol": "TCP"},
    ]
    same = render("webhook.service.port=9443")
    assert [p["port"] for p in one(same, "Service", "vcjob-webhook")["spec"]["ports"]] == [9443]


def test_scheduler_name_and_gang_schedulers_are_values() -> None:
    docs = render(
        "webhook.schedulerName=default-scheduler",
        "controller.gangSchedulers={volcano,kube-batch}",
        "webhook.queueCheck=false",
    )
    webhook_args = container(docs, "vcjob-webhook")["args"]
    assert arg_value(webhook_args, "--scheduler-name") == "default-scheduler"
    assert arg_value(webhook_args, "--queue-check") == "off"
    controller_args = container(docs, "vcjob-controller")["args"]
    assert arg_value(controller_args, "--gang-schedulers") == "volcano,kube-batch"


def test_queue_deletion_asks_for_a_closed_queue_only_when_the_value_says_so() -> None:
    # Volcano 1.14 and later delete a Queue in any state: the flag is absent by default.
    assert "--queue-delete-requires-closed" not in container(render(), "vcjob-webhook")["args"]
    strict = render("webhook.queueDeleteRequiresClosed=true")
    assert "--queue-delete-requires-closed" in container(strict, "vcjob-webhook")["args"]


def test_the_queue_allocation_gate_adds_its_flag_and_pod_mutation_only_when_on() -> None:
    hooks = [
        h["name"]
        for d in render()
        if d["kind"] == "MutatingWebhookConfiguration"
        for h in d["webhooks"]
    ]
    assert "mutatepod.vcjob.volcano.sh" not in hooks
    docs = render("webhook.featureGates.SchedulingGatesQueueAdmission=true")
    args = container(docs, "vcjob-webhook")["args"]
    assert arg_value(args, "--feature-gates") == "SchedulingGatesQueueAdmission=true"
    (mutating,) = find(docs, "MutatingWebhookConfiguration")
    (pod_hook,) = [h for h in mutating["webhooks"] if h["name"] == "mutatepod.vcjob.volcano.sh"]
    assert pod_hook["clientConfig"]["service"]["path"] == "/pods/mutate"
    assert pod_hook["failurePolicy"] == "Ignore"
    assert pod_hook["rules"][0]["resources"] == ["pods"]


def test_gang_scheduling_can_be_turned_off() -> None:
    result = subprocess.run(
        [
            str(tool_path("helm")),
            "template",
            "vcjob",
            str(CHART),
            "--namespace",
            NAMESPACE,
            "--set-json",
            "controller.gangSchedulers=[]",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    docs = tuple(d for d in yaml.safe_load_all(result.stdout) if d)
    assert arg_value(container(docs, "vcjob-controller")["args"], "--gang-schedulers") == ""


def test_controller_runs_with_leader_election() -> None:
    docs = render()
    assert one(docs, "Deployment", "vcjob-controller")["spec"]["replicas"] == 1
    args = container(docs, "vcjob-controller")["args"]
    assert args[:2] == ["controller", "--leader-elect"]
    assert arg_value(args, "--lease-namespace") == NAMESPACE
    assert arg_value(args, "--lease-name") == "vcjob-controller"
    assert arg_value(args, "--gang-schedulers") == "volcano"
    assert arg_value(args, "--health-port") == "8081"
    assert arg_value(args, "--metrics-port") == "8080"


def test_elastic_autoscaler_is_on_by_default_and_can_be_turned_off() -> None:
    args = container(render("controller.elastic.period=1m"), "vcjob-controller")["args"]
    assert "--elastic" in args
    assert arg_value(args, "--elastic-period") == "1m"
    assert arg_value(args, "--gpu-resource") == "nvidia.com/gpu"
    assert "--elastic-dry-run" not in args
    off = container(render("controller.elastic.enabled=false"), "vcjob-controller")["args"]
    assert "--no-elastic" in off
    assert "--elastic" not in off


def test_image_tag_defaults_to_app_version_and_is_overridable() -> None:
    docs = render("image.repository=registry.example/vcjob", "image.tag=1.2.3")
    assert container(docs, "vcjob-webhook")["image"] == "registry.example/vcjob:1.2.3"
    assert container(docs, "vcjob-controller")["image"] == "registry.example/vcjob:1.2.3"


def test_changed_settings_roll_the_pods() -> None:
    def checksum(*sets: str) -> str:
        deployment = one(render(*sets), "Deployment", "vcjob-webhook")
        return str(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    assert checksum() == checksum()
    assert checksum() != checksum("webhook.timeoutSeconds=7")


# ----- CRDs and the default Queue ---------------------------------------------------------------


def test_crds_come_from_the_generated_files() -> None:
    files = sorted((CHART / "files" / "crds").glob("*.yaml"))
    assert files, (
        "charts/vcjob/files/crds is empty: run `vcjob crds --write charts/vcjob/files/crds`"
    )
    expected = {yaml.safe_load(p.read_text())["metadata"]["name"] for p in files}
    crds = find(render(), "CustomResourceDefinition")
    assert {c["metadata"]["name"] for c in crds} == expected
    for crd in crds:
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        source = yaml.safe_load(
            (CHART / "files" / "crds" / f"{crd['metadata']['name']}.yaml").read_text()
        )
        assert crd["spec"] == source["spec"]


def test_crds_can_be_left_to_helm_or_skipped() -> None:
    for crd in find(render("crds.keep=false"), "CustomResourceDefinition"):
        assert "helm.sh/resource-policy" not in (crd["metadata"].get("annotations") or {})
    assert not find(render("crds.enabled=false"), "CustomResourceDefinition")


def test_volcanos_scheduling_crds_can_be_left_alone() -> None:
    names = {
        c["metadata"]["name"]
        for c in find(render("crds.scheduling=false"), "CustomResourceDefinition")
    }
    assert names == {
        "jobs.batch.volcano.sh",
        "cronjobs.batch.volcano.sh",
        "commands.bus.volcano.sh",
        "jobflows.flow.volcano.sh",
        "jobtemplates.flow.volcano.sh",
    }


def test_only_absent_installs_everything_when_nothing_is_there() -> None:
    # `helm template` has no cluster to look in: every CRD counts as absent.
    crds = find(render("crds.onlyAbsent=true"), "CustomResourceDefinition")
    assert len(crds) == 8


def test_the_controller_creates_the_default_queue_not_a_hook() -> None:
    """A post-install hook could run before kube-apiserver serves the Queue CRD the same install
    created (helm then fails the install): the controller creates the Queue instead."""
    assert not find(render(), "Queue")
    args = container(render(), "vcjob-controller")["args"]
    assert arg_value(args, "--default-queue-weight") == "1"
    assert "--default-queue-reclaimable" in args and "--no-create-default-queue" not in args
    custom = container(render("queue.weight=3", "queue.reclaimable=false"), "vcjob-controller")[
        "args"
    ]
    assert arg_value(custom, "--default-queue-weight") == "3"
    assert "--no-default-queue-reclaimable" in custom
    off = container(render("queue.createDefault=false"), "vcjob-controller")["args"]
    assert "--no-create-default-queue" in off and "--default-queue-weight" not in off


# ----- optional pieces and helm test ------------------------------------------------------------


def test_network_policy_and_service_monitor_are_off_by_default() -> None:
    docs = render()
    assert not find(docs, "NetworkPolicy")
    assert not find(docs, "ServiceMonitor")
    docs = render(*EVERYTHING_ON)
    policy = one(docs, "NetworkPolicy", "vcjob-webhook")
    ingress_ports = [p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]]
    assert 9443 in ingress_ports
    assert {m["metadata"]["name"] for m in find(docs, "ServiceMonitor")} == {
        "vcjob-webhook",
        "vcjob-controller",
    }


def test_helm_test_pod_expects_the_webhook_denial() -> None:
    docs = render()
    pod = one(docs, "Pod", "vcjob-test-admission")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (main,) = pod["spec"]["containers"]
    assert (
        main["image"]
        == one(render(), "Deployment", "vcjob-webhook")["spec"]["template"]["spec"]["containers"][
            0
        ]["image"]
    )
    assert main["command"] == ["python", "-c"]
    script = main["args"][0]
    compile(script, "helm-test", "exec")  # the chart renders a valid Python program
    assert '"jobs", job, dry_run="All"' in script
    assert '"default"' in script
    assert '"denied the request" in message and "spec.minAvailable" in message' in script
    custom = render("tests.image.repository=registry.example/t", "tests.image.tag=v1")
    other = one(custom, "Pod", "vcjob-test-admission")
    assert other["spec"]["containers"][0]["image"] == "registry.example/t:v1"
    role = one(docs, "Role", "vcjob-test")
    assert role["metadata"]["namespace"] == "default"
    assert role["rules"][0]["verbs"] == ["create"]


def test_helm_test_has_one_hook_and_leaves_nothing_after_uninstall() -> None:
    """Helm reports (and with --logs reads the log of) every test hook, and never deletes a hook
    on uninstall: the Pod is the one hook; its ServiceAccount and grants are release objects,
    and the Pod, kept for its log, names its ServiceAccount as its owner."""
    docs = render()
    hooks = [
        (d["kind"], d["metadata"]["name"])
        for d in docs
        if (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"
    ]
    assert hooks == [("Pod", "vcjob-test-admission")]
    pod = one(docs, "Pod", "vcjob-test-admission")
    annotations = pod["metadata"]["annotations"]
    # hook-succeeded would delete the pod before `helm test --logs` reads it.
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation"
    assert pod["spec"]["serviceAccountName"] == "vcjob-test"
    one(docs, "ServiceAccount", "vcjob-test")
    owner = one(docs, "Role", "vcjob-test-owner")
    assert owner["metadata"]["namespace"] == NAMESPACE
    assert owner["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["serviceaccounts"],
            "resourceNames": ["vcjob-test"],
            "verbs": ["get"],
        },
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "resourceNames": ["vcjob-test-admission"],
            "verbs": ["patch"],
        },
    ]
    script = pod["spec"]["containers"][0]["args"][0]
    assert 'read_namespaced_service_account("vcjob-test", namespace)' in script
    assert '"ownerReferences": [owner]' in script
    for name in ("vcjob-test", "vcjob-test-owner"):
        assert one(docs, "RoleBinding", name)["subjects"] == [
            {"kind": "ServiceAccount", "name": "vcjob-test", "namespace": NAMESPACE}
        ]


@pytest.mark.parametrize(
    "sets",
    [
        pytest.param((), id="defaults"),
        pytest.param(
            (
                "controller.elastic.enabled=true",
                "controller.elastic.dryRun=true",
                "controller.disableNetworkPolicy=true",
                "webhook.queueCheck=false",
            ),
            id="everything-set",
        ),
    ],
)
def test_rendered_arguments_parse_with_the_real_commands(sets: tuple[str, ...]) -> None:
    """The flags the chart passes are the ones `vcjob webhook` and `vcjob controller` accept."""
    from controller.cli import controller_command
    from webhook.cli import webhook_command

    commands = {"webhook": webhook_command, "controller": controller_command}
    docs = render(*sets)
    for deployment in ("vcjob-webhook", "vcjob-controller"):
        name, *args = container(docs, deployment)["args"]
        with commands[name].make_context(name, list(args)) as context:
            assert context.params["health_port"] == 8081
            assert context.params["metrics_port"] == 8080


def test_image_can_be_pinned_by_digest() -> None:
    digest = "sha256:" + "ab" * 32
    docs = render(
        "image.repository=registry.example/vcjob", "image.tag=1.2.3", f"image.digest={digest}"
    )
    for name in ("vcjob-webhook", "vcjob-controller"):
        assert container(docs, name)["image"] == f"registry.example/vcjob@{digest}"
    test_pod = next(d for d in docs if d["kind"] == "Pod")
    assert test_pod["spec"]["containers"][0]["image"] == f"registry.example/vcjob@{digest}"


def test_network_policy_admits_only_webhook_from_on_9443() -> None:
    peer = "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24"
    policy = one(render("networkPolicy.enabled=true", peer), "NetworkPolicy", "vcjob-webhook")
    rules = {rule["ports"][0]["port"]: rule for rule in policy["spec"]["ingress"]}
    assert rules[9443]["from"] == [{"ipBlock": {"cidr": "10.0.0.0/24"}}]
    assert set(rules) == {9443, 8081, 8080}
    assert "from" in rules[8080]
    controller = one(render("networkPolicy.enabled=true"), "NetworkPolicy", "vcjob-controller")
    assert 9443 not in [p["port"] for r in controller["spec"]["ingress"] for p in r["ports"]]


def test_webhook_request_bounds_are_values() -> None:
    args = container(render(), "vcjob-webhook")["args"]
    assert args[args.index("--max-concurrent-requests") + 1] == "16"
    assert args[args.index("--read-timeout") + 1] == "10"
    sets = ("webhook.maxConcurrentRequests=4", "webhook.readTimeoutSeconds=3")
    args = container(render(*sets), "vcjob-webhook")["args"]
    assert args[args.index("--max-concurrent-requests") + 1] == "4"
    assert args[args.index("--read-timeout") + 1] == "3"


def test_kubernetes_gang_grants_only_what_the_controller_does_and_goes_when_off() -> None:
    role = one(render(), "ClusterRole", "vcjob-controller")
    assert verbs(role, "scheduling.k8s.io", "workloads") == {"create"}
    assert verbs(role, "scheduling.k8s.io", "podgroups") == {"list", "watch", "create", "update"}
    # Created once, never updated: its spec is immutable.
    assert verbs(role, "scheduling.k8s.io", "compositepodgroups") == {"list", "watch", "create"}
    off = one(render("controller.nativeGangSchedulers=null"), "ClusterRole", "vcjob-controller")
    for resource in ("workloads", "podgroups", "compositepodgroups"):
        assert verbs(off, "scheduling.k8s.io", resource) == set(), resource


def test_kueue_integration_is_off_by_default_and_grants_workloads_when_on() -> None:
    off = render()
    assert "--no-kueue" in container(off, "vcjob-controller")["args"]
    role = one(off, "ClusterRole", "vcjob-controller")
    assert verbs(role, "kueue.x-k8s.io", "workloads") == set()

    on = render("controller.kueue.enabled=true")
    args = container(on, "vcjob-controller")["args"]
    assert "--kueue" in args and "--no-kueue" not in args
    role = one(on, "ClusterRole", "vcjob-controller")
    # update: a MultiKueue worker adopts the Workload MultiKueue made for a copy.
    assert verbs(role, "kueue.x-k8s.io", "workloads") == {"list", "watch", "create", "update"}
    assert verbs(role, "kueue.x-k8s.io", "workloads/status") == {"update"}
    assert verbs(role, "kueue.x-k8s.io", "resourceflavors") == {"list", "watch"}
    assert "enabled" in render_error("controller.kueue.enabled=maybe")


def test_the_release_fits_in_a_helm_release_secret() -> None:
    """Helm keeps every release in a Secret (1 MiB at most): the whole chart, its files as base64
    inside JSON, and the rendered manifest, gzipped and base64-encoded. The CRDs are most of it;
    this estimate of Helm's encoding keeps a margin below the limit."""
    files = {str(p): p.read_bytes() for p in sorted(CHART.rglob("*")) if p.is_file()}
    manifest = b"".join(data for name, data in files.items() if "/crds/" in name)
    release = {
        "chart": [
            {"name": name, "data": base64.b64encode(data).decode()} for name, data in files.items()
        ],
        "manifest": manifest.decode(),
    }
    stored = base64.b64encode(gzip.compress(json.dumps(release).encode()))
    assert len(stored) < 850 * 1024, f"the release would take {len(stored)} of 1048576 bytes"
