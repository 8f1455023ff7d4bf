"""The `scale` subresource of the built-in workloads: an autoscaling/v1 `Scale` view of an object.
Which types serve it is the registry's business (Deployments, ReplicaSets and StatefulSets).

`kubectl scale` (and any autoscaler) reads `spec.replicas`, `status.replicas` and the label
selector through it and writes `spec.replicas` back; the object itself is updated as by a PUT.
"""

from __future__ import annotations

import copy
from typing import Any

from localcluster.apiserver import errors, patches


def _selector_string(selector: Any) -> str:
    """A metav1.LabelSelector as the string form Scale.status.selector carries."""
    if not isinstance(selector, dict):
        return ""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or []))
        if operator == "In":
            terms.append(f"{key} in ({values})")
        elif operator == "NotIn":
            terms.append(f"{key} notin ({values})")
        elif operator == "Exists":
            terms.append(key)
        elif operator == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)


def scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta
        },
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": _selector_string(spec.get("selector")),
        },
    }


def wanted_scale(current: dict[str, Any], body: Any, content_type: str) -> dict[str, Any]:
    """The Scale a PUT (`content_type` "") or a PATCH of the current Scale asks for."""
    if content_type == patches.JSON_PATCH:
        wanted: Any = patches.apply_json_patch(copy.deepcopy(current), body)
    elif content_type in (patches.MERGE_PATCH, patches.STRATEGIC_MERGE_PATCH):
        wanted = patches.json_merge_patch(current, body)
    elif content_type == "":
        wanted = body
    else:
        raise errors.StatusError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            f"{patches.JSON_PATCH}, {patches.MERGE_PATCH}, {patches.STRATEGIC_MERGE_PATCH}",
        )
    if not isinstance(wanted, dict):
        raise errors.bad_request("the request body must be a Scale object")
    return wanted


def scaled(obj: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """The object with the Scale's replicas; a resourceVersion in the Scale is a precondition."""
    replicas = (wanted.get("spec") or {}).get("replicas", 0)
    name = (obj.get("metadata") or {}).get("name", "")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(
            "Scale",
            name,
            [
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                    "field": "spec.replicas",
                }
            ],
            "autoscaling",
        )
    new = copy.deepcopy(obj)
    new.setdefault("spec", {})["replicas"] = replicas
    precondition = (wanted.get("metadata") or {}).get("resourceVersion")
    if precondition:
        new["metadata"]["resourceVersion"] = precondition
    return new
