"""The Kubernetes API's own OpenAPI definitions (v1.31), and structural CRD schemas built from them.

`definitions()` is the one place that reads the definitions; everything that needs the shape of a
built-in type (pod templates in CRDs, pod template validation in the webhook) goes through it.
`structural()` inlines one definition into the form a CRD's `openAPIV3Schema` takes, the way
controller-gen embeds `PodTemplateSpec` and `PersistentVolumeClaimSpec` in Volcano's CRDs: no
descriptions, no `$ref`, `int-or-string` for quantities, and the embedded metadata cut down to the
five fields an embedded ObjectMeta keeps.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any, Final

Schema = dict[str, Any]

SCHEMA_VERSION: Final = "v1.31.0-local"
POD_TEMPLATE_SPEC: Final = "io.k8s.api.core.v1.PodTemplateSpec"
PVC_SPEC: Final = "io.k8s.api.core.v1.PersistentVolumeClaimSpec"
LABEL_SELECTOR: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_INT_OR_STRING: Final = frozenset({QUANTITY, "io.k8s.apimachinery.pkg.util.intstr.IntOrString"})
# Keywords that carry meaning for a structural schema; descriptions and patch hints are dropped.
# List-type hints are dropped too: a map-type list needs its keys required or defaulted, which
# the upstream definitions do not promise (ports' `protocol`).
_KEPT: Final = ("format", "required", "enum", "default", "minimum", "maximum")

# The quantity form controller-gen writes for resource.Quantity.
QUANTITY_SCHEMA: Final[Schema] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
        r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
    "x-kubernetes-int-or-string": True,
}
# metav1.ObjectMeta as embedded in a CRD (controller-gen's generateEmbeddedObjectMeta).
EMBEDDED_META_SCHEMA: Final[Schema] = {
    "type": "object",
    "properties": {
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    },
}


@cache
def definitions() -> dict[str, Schema]:
    """Every definition of the Kubernetes API by OpenAPI name, `$ref`s as `#/$defs/<name>`."""
    folder = resources.files("kubernetes_validate") / "kubernetes-json-schema" / SCHEMA_VERSION
    data = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    return dict(data["$defs"])


def quantity_schema() -> Schema:
    return copy.deepcopy(QUANTITY_SCHEMA)


def resource_list_schema() -> Schema:
    """corev1.ResourceList: resource name → quantity."""
    return {"type": "object", "additionalProperties": quantity_schema()}


def _plain_type(raw: Any) -> str | None:
    kinds = [raw] if isinstance(raw, str) else [k for k in raw or [] if k != "null"]
    return kinds[0] if len(kinds) == 1 else None


def _structural(node: Schema, stack: tuple[str, ...]) -> Schema:
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in stack:
            raise ValueError(f"recursive definition {name} cannot be inlined")
        return structural(name, stack)
    out: Schema = {}
    kind = _plain_type(node.get("type"))
    if kind is not None:
        out["type"] = kind
    for key in _KEPT:
        if key in node:
            out[key] = copy.deepcopy(node[key])
    properties = node.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {k: _structural(v, stack) for k, v in sorted(properties.items())}
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        out["additionalProperties"] = _structural(additional, stack)
    items = node.get("items")
    if isinstance(items, dict):
        out["items"] = _structural(items, stack)
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "additionalProperties" not in out
    ):
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def structural(name: str, stack: tuple[str, ...] = ()) -> Schema:
    """The definition `name` inlined as a structural CRD schema (a fresh copy each call)."""
    if name in _INT_OR_STRING:
        return quantity_schema() if name == QUANTITY else {"x-kubernetes-int-or-string": True}
    if name == OBJECT_META:
        return copy.deepcopy(EMBEDDED_META_SCHEMA)
    schema = _structural(definitions()[name], (*stack, name))
    if "type" not in schema and "x-kubernetes-int-or-string" not in schema:
        raise ValueError(f"{name} has no type")
    return schema


@cache
def _pod_template_spec() -> str:
    schema = structural(POD_TEMPLATE_SPEC)
    # Volcano's CRD requires containers in a task's pod template.
    schema["properties"]["spec"]["required"] = ["containers"]
    return json.dumps(schema)


def pod_template_spec_schema() -> Schema:
    """corev1.PodTemplateSpec as embedded under a Job task's `template`."""
    loaded: Schema = json.loads(_pod_template_spec())
    return loaded
