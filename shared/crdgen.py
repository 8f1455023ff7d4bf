"""CustomResourceDefinitions generated from the schema models (the one source of truth).

Each model's JSON schema (by alias) is turned into a structural OpenAPI v3 schema: `$ref`s are
inlined, `anyOf [X, null]` becomes `X` with `nullable: true`, titles and null defaults are
dropped, and unknown fields are pruned everywhere except where a model marks a node with
`x-kubernetes-preserve-unknown-fields`. A node marked with `x-vcjob-kubernetes-schema` takes the
Kubernetes type it names, inlined from the API's own definitions (`shared.kubeschema`): the full
PodTemplateSpec under task templates, PersistentVolumeClaimSpec under volume claims, quantities for
resource lists, so kubectl's strict field validation catches a typo inside a pod template.

Descriptions: a model's docstring describes its object and the docstring under a field describes
the field (pydantic's `use_attribute_docstrings`); embedded Kubernetes types keep Kubernetes' own
descriptions. `kubectl explain vcjob.spec.tasks.template.spec.containers` therefore reads as it
does for a Pod, and `undescribed_fields` lists any field left without one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from shared import kubeschema, labels
from shared.models import Command, Job, JobSpec, PodGroup, Queue
from shared.models.base import KubeObject
from shared.models.cronjob import CRONJOB_KIND, CronJob
from shared.models.flow import (
    FLOW_GROUP,
    FLOW_VERSION,
    JOBFLOW_KIND,
    JOBTEMPLATE_KIND,
    PARTIAL_JOB_SPEC,
    JobFlow,
    JobTemplate,
)
from shared.models.job import KUBERNETES_SCHEMA
from shared.models.topology import (
    HYPERNODE_KIND,
    TOPOLOGY_GROUP,
    TOPOLOGY_VERSION,
    HyperNode,
)

PRESERVE_KEY: Final = "x-kubernetes-preserve-unknown-fields"

# Keywords copied from the pydantic schema into the CRD; everything else (title, $defs, …) is
# dropped. `additionalProperties` is handled separately (maps keep it, objects lose it).
_KEPT: Final = (
    "type",
    "description",
    "default",
    "enum",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "required",
    "nullable",
    PRESERVE_KEY,
    "x-kubernetes-validations",
)
_TOP_LEVEL: Final = ("apiVersion", "kind", "metadata", "spec", "status")


class SchemaError(ValueError):
    """A model cannot be expressed as a structural schema."""


@dataclass(frozen=True)
class CRDInfo:
    model: type[KubeObject]
    group: str
    version: str
    kind: str
    plural: str
    scope: str
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    printer_columns: tuple[dict[str, Any], ...] = ()

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


def _column(
    name: str, json_path: str, type_: str, priority: int = 0, description: str = ""
) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": type_, "jsonPath": json_path}
    if description:
        column["description"] = description
    if priority:
        column["priority"] = priority
    return column


_AGE: Final = _column("AGE", ".metadata.creationTimestamp", "date")

CRDS: Final[tuple[CRDInfo, ...]] = (
    CRDInfo(
        model=Job,
        group=labels.BATCH_GROUP,
        version=labels.BATCH_VERSION,
        kind=labels.JOB_KIND,
        plural="jobs",
        scope="Namespaced",
        short_names=("vcjob", "vj"),
        status_subresource=True,
        printer_columns=(
            _column("STATUS", ".status.state.phase", "string", description="The job's phase"),
            _column("MINAVAILABLE", ".status.minAvailable", "integer"),
            _column("RUNNINGS", ".status.running", "integer", description="Running pods"),
            _AGE,
            _column("QUEUE", ".spec.queue", "string", priority=1),
            _column(
                "REASON",
                ".status.reason",
                "string",
                description=(
                    "Why a Pending job is blocked, why a job failed, or what completed it early"
                ),
            ),
            _column(
                "SUSPENDED", ".spec.suspend", "boolean", description="spec.suspend", priority=1
            ),
        ),
    ),
    CRDInfo(
        model=Command,
        group=labels.BUS_GROUP,
        version=labels.BUS_VERSION,
        kind=labels.COMMAND_KIND,
        plural="commands",
        scope="Namespaced",
        printer_columns=(
            _column("ACTION", ".action", "string"),
            _column("TARGET", ".target.name", "string"),
            _AGE,
        ),
    ),
    CRDInfo(
        model=PodGroup,
        group=labels.SCHEDULING_GROUP,
        version=labels.SCHEDULING_VERSION,
        kind=labels.PODGROUP_KIND,
        plural="podgroups",
        scope="Namespaced",
        short_names=("pg", "podgroup-v1beta1"),
        # Volcano's scheduler writes PodGroup status with a plain update of the main resource;
        # with a status subresource the API server would drop it and no gang would ever start.
        status_subresource=False,
        printer_columns=(
            _column("STATUS", ".status.phase", "string"),
            _column("MINMEMBER", ".spec.minMember", "integer"),
            _column("RUNNINGS", ".status.running", "integer"),
            _AGE,
            _column("QUEUE", ".spec.queue", "string", priority=1),
        ),
    ),
    CRDInfo(
        model=Queue,
        group=labels.SCHEDULING_GROUP,
        version=labels.SCHEDULING_VERSION,
        kind=labels.QUEUE_KIND,
        plural="queues",
        scope="Cluster",
        short_names=("q", "queue-v1beta1"),
        status_subresource=True,
        printer_columns=(
            _column("STATE", ".status.state", "string"),
            _column("PARENT", ".spec.parent", "string", priority=1),
            _AGE,
        ),
    ),
    # Kubernetes' CronJob columns (Volcano's CRD has none, so kubectl showed only NAME and AGE);
    # ACTIVE names the running Jobs, where Kubernetes' built-in printer counts them.
    CRDInfo(
        model=CronJob,
        group=labels.BATCH_GROUP,
        version=labels.BATCH_VERSION,
        kind=CRONJOB_KIND,
        plural="cronjobs",
        scope="Namespaced",
        short_names=("cronvcjob", "cronvj"),
        status_subresource=True,
        printer_columns=(
            _column("SCHEDULE", ".spec.schedule", "string", description="When Jobs are created"),
            _column("TIMEZONE", ".spec.timeZone", "string", priority=1),
            _column("SUSPEND", ".spec.suspend", "boolean", description="No new runs when true"),
            _column("ACTIVE", ".status.active[*].name", "string", description="Running Jobs"),
            _column(
                "LAST SCHEDULE",
                ".status.lastScheduleTime",
                "date",
                description="The time of the last run",
            ),
            _AGE,
        ),
    ),
    # Volcano's JobFlow shows its phase; its JobTemplate has no printer columns (NAME and AGE).
    CRDInfo(
        model=JobFlow,
        group=FLOW_GROUP,
        version=FLOW_VERSION,
        kind=JOBFLOW_KIND,
        plural="jobflows",
        scope="Namespaced",
        short_names=("jf",),
        status_subresource=True,
        printer_columns=(
            _column("Status", ".status.state.phase", "string"),
            _column("Age", ".metadata.creationTimestamp", "date"),
        ),
    ),
    CRDInfo(
        model=JobTemplate,
        group=FLOW_GROUP,
        version=FLOW_VERSION,
        kind=JOBTEMPLATE_KIND,
        plural="jobtemplates",
        scope="Namespaced",
        short_names=("jt",),
        status_subresource=True,
    ),
    # Volcano's network topology (its scheduler reads it; vcjob's webhook checks its members).
    CRDInfo(
        model=HyperNode,
        group=TOPOLOGY_GROUP,
        version=TOPOLOGY_VERSION,
        kind=HYPERNODE_KIND,
        plural="hypernodes",
        scope="Cluster",
        short_names=("hn",),
        status_subresource=True,
        printer_columns=(
            _column("TIER", ".spec.tier", "string"),
            _column("TIERNAME", ".spec.tierName", "string"),
            _column("NODECOUNT", ".status.nodeCount", "integer"),
            _AGE,
        ),
    ),
)


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Inline a `$ref` (siblings of the reference win over the referenced schema)."""
    ref = node.get("$ref")
    if ref is None:
        return node
    target = defs[ref.rsplit("/", 1)[-1]]
    merged = {**_resolve(target, defs), **{k: v for k, v in node.items() if k != "$ref"}}
    return merged


def _collapse_nullable(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """`anyOf [X, {type: null}]` plus siblings → X merged with the siblings, nullable."""
    options = node.get("anyOf")
    if options is None:
        return node
    non_null = [o for o in options if o.get("type") != "null"]
    if len(non_null) != 1 or len(non_null) == len(options):
        raise SchemaError(f"only `X | None` unions are supported, got {options}")
    base = _resolve(non_null[0], defs)
    siblings = {k: v for k, v in node.items() if k != "anyOf"}
    return {**base, **siblings, "nullable": True}


def _kubernetes_type(name: str) -> dict[str, Any]:
    if name == "ResourceList":
        return kubeschema.resource_list_schema()
    if name == kubeschema.POD_TEMPLATE_SPEC:
        return kubeschema.pod_template_spec_schema()
    return kubeschema.structural(name)


def _partial(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without defaults, required fields or minimum list lengths, for a patch of the
    object it describes (a default would overwrite the patched object's own value)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("default", "required", "minItems"):
            continue
        if key == "properties":
            out[key] = {name: _partial(child) for name, child in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _partial(value)
        else:
            out[key] = value
    return out


def _convert(node: dict[str, Any], defs: dict[str, Any], where: str) -> dict[str, Any]:
    node = _collapse_nullable(_resolve(node, defs), defs)
    if isinstance(node.get("description"), str):
        node = {**node, "description": " ".join(node["description"].split())}
    if node.get(PARTIAL_JOB_SPEC):
        partial = _partial(job_spec_schema())
        if "description" in node:
            partial["description"] = node["description"]
        return partial
    if KUBERNETES_SCHEMA in node:
        embedded = _kubernetes_type(str(node[KUBERNETES_SCHEMA]))
        if node.get("nullable"):
            embedded["nullable"] = True
        if node.get("description"):
            embedded["description"] = node["description"]
        return embedded
    out: dict[str, Any] = {}
    for key in _KEPT:
        if key in node and not (key == "default" and node[key] is None):
            out[key] = node[key]
    if "type" not in out:
        raise SchemaError(f"{where}: every node of a structural schema needs a type")
    if out["type"] == "object":
        properties = node.get("properties")
        extra = node.get("additionalProperties")
        if properties:
            out["properties"] = {
                name: _convert(child, defs, f"{where}.{name}") for name, child in properties.items()
            }
        elif isinstance(extra, dict):
            out["additionalProperties"] = _convert(extra, defs, f"{where}[*]")
        elif not out.get(PRESERVE_KEY):
            raise SchemaError(f"{where}: a free-form object must be typed or marked {PRESERVE_KEY}")
        if out.get("default") == {} and properties is None:
            del out["default"]
    elif out["type"] == "array":
        items = node.get("items")
        if not isinstance(items, dict):
            raise SchemaError(f"{where}: an array needs an item schema")
        out["items"] = _convert(items, defs, f"{where}[*]")
    if out.get("default") is not None and out.get("nullable") and out["default"] == []:
        del out["default"]
    return out


# Every object's apiVersion, kind and metadata, described as Kubernetes describes them.
_OBJECT_HEADER: Final[dict[str, dict[str, str]]] = {
    "apiVersion": {
        "type": "string",
        "description": "APIVersion defines the versioned schema of this representation of an "
        "object. Servers should convert recognized schemas to the latest internal value, and may "
        "reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/"
        "sig-architecture/api-conventions.md#resources",
    },
    "kind": {
        "type": "string",
        "description": "Kind is a string value representing the REST resource this object "
        "represents. Servers may infer this from the endpoint the client submits requests to. "
        "Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/"
        "devel/sig-architecture/api-conventions.md#types-kinds",
    },
    # The API server refuses anything but a type here; `kubectl explain` describes ObjectMeta.
    "metadata": {"type": "object"},
}


def undescribed_fields(schema: dict[str, Any], path: str = "") -> list[str]:
    """The field paths of a CRD schema that have no description (`kubectl explain` would show
    `<no description>`), `[*]` for list items and `{*}` for map values; a top-level `metadata`
    is described by the API server itself."""
    missing: list[str] = []
    for name, child in (schema.get("properties") or {}).items():
        where = f"{path}.{name}" if path else name
        if where == "metadata":
            continue
        if not str(child.get("description") or "").strip():
            missing.append(where)
        missing.extend(undescribed_fields(child, where))
    for key, mark in (("items", "[*]"), ("additionalProperties", "{*}")):
        if isinstance(schema.get(key), dict):
            missing.extend(undescribed_fields(schema[key], f"{path}{mark}"))
    return missing


def job_spec_schema() -> dict[str, Any]:
    """The Job's `spec` schema, for resources that embed a JobSpec (a CronJob's jobTemplate)."""
    source = JobSpec.model_json_schema(by_alias=True, mode="validation")
    return _convert(source, source.get("$defs", {}), "spec")


def openapi_schema(model: type[KubeObject]) -> dict[str, Any]:
    """The structural `openAPIV3Schema` of a top-level object."""
    source = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = source.get("$defs", {})
    properties: dict[str, Any] = {name: dict(schema) for name, schema in _OBJECT_HEADER.items()}
    for name, child in source["properties"].items():
        if name in _TOP_LEVEL[:3]:
            continue
        converted = _convert(child, defs, name)
        # Top-level blocks are never null: an absent block is simply left out.
        converted.pop("nullable", None)
        properties[name] = converted
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if model.__doc__:
        schema["description"] = " ".join(model.__doc__.split())
    return schema


def build_crd(info: CRDInfo) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": info.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": openapi_schema(info.model)},
    }
    if info.status_subresource:
        version["subresources"] = {"status": {}}
    if info.printer_columns:
        version["additionalPrinterColumns"] = [dict(c) for c in info.printer_columns]
    names: dict[str, Any] = {
        "kind": info.kind,
        "listKind": f"{info.kind}List",
        "plural": info.plural,
        "singular": info.kind.lower(),
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.name},
        "spec": {
            "group": info.group,
            "names": names,
            "scope": info.scope,
            "versions": [version],
        },
    }


def build_crds() -> list[dict[str, Any]]:
    """Job, Command, PodGroup, Queue, CronJob, JobFlow, JobTemplate and HyperNode, in that order."""
    return [build_crd(info) for info in CRDS]


def file_name(crd: dict[str, Any]) -> str:
    return f"{crd['metadata']['name']}.yaml"


class _PlainDumper(yaml.SafeDumper):
    """Writes repeated values (the same enum list in several places) out in full, no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(crd: dict[str, Any]) -> str:
    return yaml.dump(crd, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, width=100)


def render_all() -> str:
    """Every CRD as one multi-document YAML stream."""
    return "---\n" + "---\n".join(render(crd) for crd in build_crds())


def write_all(directory: Path) -> list[Path]:
    """Write `<plural>.<group>.yaml` per CRD into `directory` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for crd in build_crds():
        path = directory / file_name(crd)
        path.write_text(render(crd), encoding="utf-8")
        paths.append(path)
    return paths
