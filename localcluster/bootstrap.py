"""What `vcjob local up` writes into a fresh cluster: the CRDs (read from the chart's files), the
namespaces, the default Queue and the webhook configurations the chart would install, aimed at the
webhook on 127.0.0.1. Pure builders, except for reading the CRD files."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from localcluster.clusterdir import StartupError
from localcluster.tools import PROJECT_ROOT
from shared.labels import (
    CRONJOB_MUTATE_PATH,
    CRONJOB_MUTATING_WEBHOOK_NAME,
    CRONJOB_VALIDATE_PATH,
    CRONJOB_VALIDATING_WEBHOOK_NAME,
    DEFAULT_QUEUE,
    HYPERNODE_VALIDATE_PATH,
    HYPERNODE_VALIDATING_WEBHOOK_NAME,
    MUTATE_PATH,
    MUTATING_WEBHOOK_NAME,
    POD_MUTATE_PATH,
    POD_MUTATING_WEBHOOK_NAME,
    POD_VALIDATE_PATH,
    POD_VALIDATING_WEBHOOK_NAME,
    PODGROUP_MUTATE_PATH,
    PODGROUP_MUTATING_WEBHOOK_NAME,
    PODGROUP_VALIDATE_PATH,
    PODGROUP_VALIDATING_WEBHOOK_NAME,
    QUEUE_MUTATE_PATH,
    QUEUE_MUTATING_WEBHOOK_NAME,
    QUEUE_VALIDATE_PATH,
    QUEUE_VALIDATING_WEBHOOK_NAME,
    SCHEDULING_GROUP,
    SCHEDULING_VERSION,
    TOPOLOGY_GROUP,
    TOPOLOGY_VERSION,
    VALIDATE_PATH,
    VALIDATING_WEBHOOK_NAME,
)
from shared.models.flow import (
    FLOW_GROUP,
    JOBFLOW_VALIDATE_PATH,
    JOBFLOW_VALIDATING_WEBHOOK_NAME,
    JOBTEMPLATE_VALIDATE_PATH,
    JOBTEMPLATE_VALIDATING_WEBHOOK_NAME,
)

DEFAULT_CRDS_DIR = PROJECT_ROOT / "charts" / "vcjob" / "files" / "crds"
BARE_NAMESPACES = ("default", "kube-system")
NAMESPACES_TO_CREATE = (*BARE_NAMESPACES, "vcjob-system")
MUTATING_CONFIG_NAME = "vcjob-mutate"
VALIDATING_CONFIG_NAME = "vcjob-validate"
WEBHOOK_HOSTS = ("127.0.0.1", "localhost", "vcjob-webhook.vcjob-system.svc")
# libyaml's safe loader where PyYAML was built with it: the chart's CRDs (1.8 MB of YAML) load in
# about a third of the pure-Python loader's time, at every cluster start.
YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def default_queue() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": DEFAULT_QUEUE},
        "spec": {"weight": 1, "reclaimable": True},
    }


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def webhook_configurations(
    port: int, ca_pem: bytes, *, pod_mutation: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration the chart installs, aimed at 127.0.0.1;
    with `pod_mutation`, the `/pods/mutate` hook of the SchedulingGatesQueueAdmission gate."""
    ca_bundle = base64.b64encode(ca_pem).decode()
    labels = {"app.kubernetes.io/name": "vcjob", "app.kubernetes.io/component": "webhook"}

    def hook(
        name: str,
        path: str,
        operations: list[str],
        resource: str = "jobs",
        group: str = "batch.volcano.sh",
        version: str = "v1alpha1",
        scope: str = "Namespaced",
        failure_policy: str = "Fail",
    ) -> dict[str, Any]:
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": failure_policy,
            "matchPolicy": "Equivalent",
            "timeoutSeconds": 5,
            "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle},
            "rules": [
                {
                    "apiGroups": [group],
                    "apiVersions": [version],
                    "operations": operations,
                    "resources": [resource],
                    "scope": scope,
                }
            ],
            "namespaceSelector": {},
            "objectSelector": {},
        }

    scheduling = {"group": SCHEDULING_GROUP, "version": SCHEDULING_VERSION}
    topology = {"group": TOPOLOGY_GROUP, "version": TOPOLOGY_VERSION, "scope": "Cluster"}
    queues = {**scheduling, "resource": "queues", "scope": "Cluster"}
    podgroups = {**scheduling, "resource": "podgroups"}
    extra_mutating = [
        hook(QUEUE_MUTATING_WEBHOOK_NAME, QUEUE_MUTATE_PATH, ["CREATE"], **queues),
        hook(PODGROUP_MUTATING_WEBHOOK_NAME, PODGROUP_MUTATE_PATH, ["CREATE"], **podgroups),
    ]
    if pod_mutation:
        # Every pod passes here, as in the chart: a webhook that is down must not stop them.
        extra_mutating.append(
            hook(
                POD_MUTATING_WEBHOOK_NAME,
                POD_MUTATE_PATH,
                ["CREATE"],
                resource="pods",
                group="",
                version="v1",
                failure_policy="Ignore",
            )
        )
    extra_validating = [
        hook(
            QUEUE_VALIDATING_WEBHOOK_NAME,
            QUEUE_VALIDATE_PATH,
            ["CREATE", "UPDATE", "DELETE"],
            **queues,
        ),
        hook(PODGROUP_VALIDATING_WEBHOOK_NAME, PODGROUP_VALIDATE_PATH, ["CREATE"], **podgroups),
        # Every pod of the cluster passes here: a webhook that is down must not stop them.
        hook(
            POD_VALIDATING_WEBHOOK_NAME,
            POD_VALIDATE_PATH,
            ["CREATE"],
            resource="pods",
            group="",
            version="v1",
            failure_policy="Ignore",
        ),
        hook(
            HYPERNODE_VALIDATING_WEBHOOK_NAME,
            HYPERNODE_VALIDATE_PATH,
            ["CREATE", "UPDATE"],
            resource="hypernodes",
            **topology,
        ),
        hook(
            JOBFLOW_VALIDATING_WEBHOOK_NAME,
            JOBFLOW_VALIDATE_PATH,
            ["CREATE", "UPDATE"],
            resource="jobflows",
            group=FLOW_GROUP,
        ),
        hook(
            JOBTEMPLATE_VALIDATING_WEBHOOK_NAME,
            JOBTEMPLATE_VALIDATE_PATH,
            ["CREATE", "UPDATE"],
            resource="jobtemplates",
            group=FLOW_GROUP,
        ),
    ]

    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING_CONFIG_NAME, "labels": labels},
        "webhooks": [
            {**hook(MUTATING_WEBHOOK_NAME, MUTATE_PATH, ["CREATE"]), "reinvocationPolicy": "Never"},
            {
                **hook(CRONJOB_MUTATING_WEBHOOK_NAME, CRONJOB_MUTATE_PATH, ["CREATE"], "cronjobs"),
                "reinvocationPolicy": "Never",
            },
            *({**h, "reinvocationPolicy": "Never"} for h in extra_mutating),
        ],
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_CONFIG_NAME, "labels": labels},
        "webhooks": [
            hook(VALIDATING_WEBHOOK_NAME, VALIDATE_PATH, ["CREATE", "UPDATE"]),
            hook(
                CRONJOB_VALIDATING_WEBHOOK_NAME,
                CRONJOB_VALIDATE_PATH,
                ["CREATE", "UPDATE"],
                "cronjobs",
            ),
            *extra_validating,
        ],
    }
    return mutating, validating


def load_crds(folder: Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in the folder's YAML files, in file-name order."""
    crds = []
    for path in sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml")):
        with path.open() as stream:
            for document in yaml.load_all(stream, Loader=YAML_LOADER):
                if not document:
                    continue
                if document.get("kind") != "CustomResourceDefinition":
                    raise StartupError(
                        f"{path}: expected a CustomResourceDefinition, not {document.get('kind')!r}"
                    )
                crds.append(document)
    return crds
