"""Which fields a `fieldSelector` may name, per resource, and their values on an object."""

from __future__ import annotations

from typing import Any

from localcluster.apiserver import errors
from shared import selectors

_COMMON = ("metadata.name", "metadata.namespace")

_BY_RESOURCE: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "pods"): (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    ("", "events"): (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    ("events.k8s.io", "events"): (
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "reason",
        "reportingController",
        "type",
    ),
    ("", "namespaces"): ("status.phase",),
    ("", "secrets"): ("type",),
    ("", "nodes"): ("spec.unschedulable",),
}


# Boolean fields select as "false" when unset, as kube's field label functions format them.
_BOOLEAN_FIELDS = frozenset({"spec.hostNetwork", "spec.unschedulable"})


def _lookup(obj: Any, dotted: str) -> str:
    value = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return "false" if dotted in _BOOLEAN_FIELDS else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        # Core events' `source` selects on the component.
        return str(value.get("component", ""))
    return str(value)


def supported_fields(group: str, plural: str) -> tuple[str, ...]:
    return _COMMON + _BY_RESOURCE.get((group, plural), ())


def parse(group: str, plural: str, text: str) -> selectors.Selector:
    """Parse and check a field selector; an unsupported field is a 400 as in kube."""
    try:
        parsed = selectors.parse_fields(text)
    except selectors.SelectorError as exc:
        raise errors.bad_request(f"invalid field selector: {exc}") from exc
    allowed = supported_fields(group, plural)
    for requirement in parsed:
        if requirement.key not in allowed:
            raise errors.bad_request(f"field label not supported: {requirement.key}")
    return parsed


def field_values(group: str, plural: str, obj: dict[str, Any]) -> dict[str, str]:
    return {name: _lookup(obj, name) for name in supported_fields(group, plural)}
