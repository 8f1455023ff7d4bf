"""Defaults kube-apiserver fills into built-in objects, and the status they start with.

Only the defaults clients commonly read back are set (pod scheduler name, restart policy, grace
period, image pull policy; service type and ports; deployment replicas and strategy).
"""

from __future__ import annotations

import base64
import ipaddress
from typing import Any

from localcluster.apiserver.registry import ResourceType


def _container_defaults(container: dict[str, Any]) -> None:
    image = str(container.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in container:
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        container["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")


def pod_spec_defaults(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                _container_defaults(container)


def _qos_class(spec: dict[str, Any]) -> str:
    requests_seen = False
    guaranteed = True
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            requests_seen = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not requests_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


class ClusterIPs:
    """Hands out service cluster IPs from 10.96.0.0/12."""

    def __init__(self) -> None:
        self._next = int(ipaddress.ip_address("10.96.0.10"))

    def allocate(self) -> str:
        self._next += 1
        return str(ipaddress.ip_address(self._next))


def apply_defaults(resource: ResourceType, obj: dict[str, Any], cluster_ips: ClusterIPs) -> None:
    if resource.crd:
        return
    key = (resource.group, resource.plural)
    spec = obj.get("spec")
    if key == ("", "pods") and isinstance(spec, dict):
        pod_spec_defaults(spec)
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("priority", 0)
    elif key == ("apps", "deployments") and isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            strategy.setdefault("type", "RollingUpdate")
            strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
        template_spec = (spec.get("template") or {}).get("spec")
        if isinstance(template_spec, dict):
            pod_spec_defaults(template_spec)
    elif key == ("batch", "jobs") and isinstance(spec, dict):
        job_defaults(obj, spec)
    elif key == ("batch", "cronjobs") and isinstance(spec, dict):
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        job_spec = (spec.get("jobTemplate") or {}).get("spec")
        if isinstance(job_spec, dict):
            _job_spec_defaults(job_spec)
    elif key == ("", "replicationcontrollers") and isinstance(spec, dict):
        replication_controller_defaults(obj, spec)
    elif key == ("", "services") and isinstance(spec, dict):
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None":
            if not spec.get("clusterIP"):
                spec["clusterIP"] = cluster_ips.allocate()
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))
    elif key == ("", "secrets"):
        obj.setdefault("type", "Opaque")
        # stringData is write-only: it is merged into data, as the Secret strategy does.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {})
            for name, value in string_data.items():
                data[name] = base64.b64encode(str(value).encode()).decode()
    elif key == ("", "namespaces"):
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        # Every namespace carries its name as a label, which namespaceSelectors rely on.
        meta = obj.setdefault("metadata", {})
        if meta.get("name"):
            labels = meta.get("labels")
            meta["labels"] = {**(labels if isinstance(labels, dict) else {})}
            meta["labels"]["kubernetes.io/metadata.name"] = meta["name"]


JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")


def _job_spec_defaults(spec: dict[str, Any]) -> None:
    """SetDefaults_Job: one completion and one pod at a time unless told, six retries."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimitPerIndex") is None:
        spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if spec.get("podFailurePolicy") is None:
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    template_spec = (spec.get("template") or {}).get("spec")
    if isinstance(template_spec, dict):
        # As in kube, restartPolicy defaults to Always here too, which validation then rejects.
        pod_spec_defaults(template_spec)


def job_defaults(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """Job defaults plus the selector kube's Job strategy generates once the uid is known:
    the pods carry the Job's uid and name as labels and the selector matches the uid."""
    _job_spec_defaults(spec)
    meta = obj.get("metadata") or {}
    uid = meta.get("uid")
    if not uid or spec.get("manualSelector") or spec.get("selector"):
        return
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {})
    labels = dict(template_meta.get("labels") or {})
    for label in JOB_UID_LABELS:
        labels[label] = uid
    for label in JOB_NAME_LABELS:
        labels[label] = meta.get("name", "")
    template_meta["labels"] = labels
    spec["selector"] = {"matchLabels": {JOB_UID_LABELS[0]: uid}}


def replication_controller_defaults(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """SetDefaults_ReplicationController: selector and labels default to the template's."""
    spec.setdefault("replicas", 1)
    spec.setdefault("minReadySeconds", 0)
    template = spec.get("template")
    if not isinstance(template, dict):
        return
    labels = (template.get("metadata") or {}).get("labels") or {}
    if labels and not spec.get("selector"):
        spec["selector"] = dict(labels)
    meta = obj.setdefault("metadata", {})
    if labels and not meta.get("labels"):
        meta["labels"] = dict(labels)
    template_spec = template.get("spec")
    if isinstance(template_spec, dict):
        pod_spec_defaults(template_spec)


def initial_status(resource: ResourceType, obj: dict[str, Any]) -> None:
    """Reset `status` on create, the way each type's strategy does."""
    if not resource.has_status or resource.preserve_status_on_create:
        return
    key = (resource.group, resource.plural)
    if key == ("", "pods"):
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj.get("spec") or {})}
    elif key == ("", "namespaces"):
        obj["status"] = {"phase": "Active"}
    elif key == ("", "services"):
        obj["status"] = {"loadBalancer": {}}
    elif key == ("", "persistentvolumeclaims"):
        obj["status"] = {"phase": "Pending"}
    elif key == ("", "replicationcontrollers"):
        obj["status"] = {"replicas": 0}
    elif key in (
        ("apps", "deployments"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("apiregistration.k8s.io", "apiservices"),
    ):
        obj["status"] = {}
    else:
        obj.pop("status", None)
