"""The resource types the server serves: a built-in table plus every established CRD."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


@dataclass(frozen=True)
class ResourceType:
    """One served resource of one group/version."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    # CRD-only facts.
    crd: bool = False
    schema: dict[str, Any] | None = None
    printer_columns: tuple[dict[str, Any], ...] = ()
    storage_version: str = ""
    preserve_status_on_create: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """`configmaps` or `jobs.batch.volcano.sh`, as error messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def returns_deleted_object(self) -> bool:
        """Whether an immediate DELETE answers the deleted object rather than a Status."""
        return not self.crd and self.storage_key in RETURNS_DELETED_OBJECT

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def storage_key(self) -> tuple[str, str]:
        """Every version of a resource shares one store."""
        return (self.group, self.plural)

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


def _t(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    singular: str = "",
    preserve_status: bool = False,
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        singular=singular or kind.lower(),
        kind=kind,
        namespaced=namespaced,
        short_names=short,
        categories=categories,
        subresources=sub,
        preserve_status_on_create=preserve_status,
    )


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _t("", "v1", "namespaces", "Namespace", False, ("ns",), sub=("status", "finalize")),
    _t("", "v1", "pods", "Pod", short=("po",), categories=("all",), sub=("status", "binding")),
    _t("", "v1", "services", "Service", short=("svc",), categories=("all",), sub=("status",)),
    _t("", "v1", "configmaps", "ConfigMap", short=("cm",)),
    _t("", "v1", "secrets", "Secret"),
    _t(
        "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",), sub=("status",)
    ),
    _t("", "v1", "events", "Event", short=("ev",)),
    _t("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",)),
    _t("", "v1", "nodes", "Node", False, ("no",), sub=("status",), preserve_status=True),
    _t("", "v1", "endpoints", "Endpoints", short=("ep",), singular="endpoints"),
    _t("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    _t(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        short=("deploy",),
        categories=("all",),
        sub=("status", "scale"),
    ),
    _t(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        short=("rs",),
        categories=("all",),
        sub=("status", "scale"),
    ),
    _t(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        short=("sts",),
        categories=("all",),
        sub=("status", "scale"),
    ),
    _t(
        "apps", "v1", "daemonsets", "DaemonSet", short=("ds",), categories=("all",), sub=("status",)
    ),
    _t(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        short=("hpa",),
        categories=("all",),
        sub=("status",),
    ),
    _t("networking.k8s.io", "v1", "ingresses", "Ingress", short=("ing",), sub=("status",)),
    _t("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False),
    _t("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    _t("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), sub=("status",)),
    _t("", "v1", "resourcequotas", "ResourceQuota", short=("quota",), sub=("status",)),
    _t("", "v1", "limitranges", "LimitRange", short=("limits",)),
    _t("coordination.k8s.io", "v1", "leases", "Lease"),
    _t("events.k8s.io", "v1", "events", "Event", short=("ev",)),
    _t("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _t(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        short=("pdb",),
        sub=("status",),
    ),
    _t("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short=("netpol",)),
    _t(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        False,
        categories=("api-extensions",),
    ),
    _t(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
        categories=("api-extensions",),
    ),
    _t(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        ("api-extensions",),
        ("status",),
    ),
    _t("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    _t(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        short=("rc",),
        categories=("all",),
        sub=("status",),
    ),
    _t("batch", "v1", "jobs", "Job", categories=("all",), sub=("status",)),
    _t("batch", "v1", "cronjobs", "CronJob", short=("cj",), categories=("all",), sub=("status",)),
    _t(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        False,
        categories=("api-extensions",),
        sub=("status",),
    ),
)

# The built-in stores kube-apiserver declares with `ReturnDeletedObject: true` (their OpenAPI
# DELETE answers the type itself): an immediate DELETE answers the deleted object. Every other
# store, custom resources included, answers a Success Status naming it. A DELETE that only
# starts a deletion (finalizers or a grace period pending) answers the object in every store;
# a CRD's always does (kube finalizes it while its instances are deleted).
RETURNS_DELETED_OBJECT = frozenset(
    {
        ("", "namespaces"),
        ("", "pods"),
        ("", "services"),
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("", "resourcequotas"),
        ("", "serviceaccounts"),
        ("storage.k8s.io", "storageclasses"),
    }
)

# Subresources answered with a clear "not supported" Status rather than a bare 404.
UNSUPPORTED_SUBRESOURCES = frozenset(
    {"exec", "log", "attach", "proxy", "eviction", "ephemeralcontainers"}
)

# Kinds of subresource discovery entries.
SUBRESOURCE_KINDS = {"binding": "Binding", "scale": "Scale"}
SUBRESOURCE_VERBS = {
    "binding": ("create",),
    "finalize": ("update",),
    "scale": ("get", "patch", "update"),
}
# Subresources served in another API group's kind, as kube's discovery says.
SUBRESOURCE_GROUP_VERSIONS = {"scale": ("autoscaling", "v1")}

CRD_TYPE = next(t for t in BUILTIN_TYPES if t.plural == "customresourcedefinitions")
NAMESPACE_TYPE = next(t for t in BUILTIN_TYPES if t.plural == "namespaces")


class Registry:
    """Looks resource types up by group/version/plural and lists them for discovery."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_types: dict[str, list[ResourceType]] = {}
        self._group_order: list[str] = []
        for resource in BUILTIN_TYPES:
            self._add(resource)

    def _add(self, resource: ResourceType) -> None:
        self._types[(resource.group, resource.version, resource.plural)] = resource
        if resource.group not in self._group_order:
            self._group_order.append(resource.group)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def has_group_version(self, group: str, version: str) -> bool:
        return any(g == group and v == version for (g, v, _) in self._types)

    def types(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def groups(self) -> list[tuple[str, list[str]]]:
        """Each group with its versions, preferred (first) version first."""
        out: list[tuple[str, list[str]]] = []
        for group in self._group_order:
            versions: list[str] = []
            for g, v, _ in self._types:
                if g == group and v not in versions:
                    versions.append(v)
            if versions:
                out.append((group, sorted(versions, key=version_priority, reverse=True)))
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for (g, v, _), t in self._types.items() if g == group and v == version]

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        return next(
            (t for t in self.in_group_version(group, version) if t.kind == kind),
            None,
        )

    def register_crd(self, crd_name: str, resources: Iterable[ResourceType]) -> None:
        self.unregister_crd(crd_name)
        added = list(resources)
        for resource in added:
            self._add(resource)
        self._crd_types[crd_name] = added

    def unregister_crd(self, crd_name: str) -> None:
        for resource in self._crd_types.pop(crd_name, []):
            self._types.pop((resource.group, resource.version, resource.plural), None)
        remaining = {g for (g, _, _) in self._types}
        self._group_order = [g for g in self._group_order if g in remaining]

    def name_conflicts(self, group: str, plural: str, crd_name: str) -> bool:
        """Whether another CRD or a built-in already serves `plural.group`."""
        for (g, _, p), resource in self._types.items():
            if g == group and p == plural:
                owner = next((n for n, ts in self._crd_types.items() if resource in ts), None)
                if owner != crd_name:
                    return True
        return False


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first."""
    import re

    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (-1, 0, 0)
    major = int(match[1])
    stage = {"alpha": 0, "beta": 1, None: 2}[match[2]]
    minor = int(match[3] or 0)
    return (stage, major, minor)


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The served versions of a CRD as resource types."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    plural = str(names.get("plural", ""))
    kind = str(names.get("kind", ""))
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    versions = spec.get("versions") or []
    storage = next((v.get("name") for v in versions if v.get("storage")), None) or (
        versions[0].get("name") if versions else ""
    )
    out: list[ResourceType] = []
    for version in versions:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        out.append(
            ResourceType(
                group=group,
                version=str(version.get("name")),
                plural=plural,
                singular=str(names.get("singular") or kind.lower()),
                kind=kind,
                namespaced=namespaced,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=("status",) if "status" in subresources else (),
                crd=True,
                schema=schema,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                storage_version=str(storage),
            )
        )
    return out
