"""The Job a JobFlow step makes: its JobTemplate's spec with the step's `patch.jobSpec` merged
in."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controller.jobflow.decide.flow import (
    MAX_LABEL_VALUE,
    as_object,
    job_name,
    object_string,
    steps_of,
)
from shared import labels
from shared.models.flow import (
    CREATED_BY_JOBFLOW,
    CREATED_BY_JOBTEMPLATE,
    FLOW_API_VERSION,
    JOBFLOW_KIND,
)
from shared.wire import WireObject


def _merge(base: Any, patch: Any) -> Any:
    """RFC 7386 merge (null deletes, objects merge, anything else replaces), except that
    `tasks` lists merge their entries by `name` (a patch may change one task's replicas without
    repeating the others)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif key == "tasks" and isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = _merge_tasks(out[key], value)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def _merge_tasks(base: list[Any], patch: list[Any]) -> list[Any]:
    merged = [copy.deepcopy(t) for t in base]
    index = {as_object(t).get("name"): i for i, t in enumerate(merged)}
    for task in patch:
        name = as_object(task).get("name")
        if name in index:
            merged[index[name]] = _merge(merged[index[name]], task)
        else:
            merged.append(copy.deepcopy(task))
    return merged


def merge_job_spec(spec: Mapping[str, Any], patch: Mapping[str, Any] | None) -> WireObject:
    """The template's spec with the flow's `patch.jobSpec` merged in."""
    merged: WireObject = _merge(dict(spec), dict(patch or {}))
    return merged


def build_job(flow: WireObject, step: str, template: WireObject) -> WireObject:
    """The Job of one step: named `<flow>-<step>`, controlled by the flow, spec from the
    template with the step's patch."""
    meta = as_object(flow.get("metadata"))
    namespace, flow_name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    marks = {
        CREATED_BY_JOBTEMPLATE: object_string(namespace, step),
        CREATED_BY_JOBFLOW: object_string(namespace, flow_name),
    }
    # A label value has at most 63 characters; the annotations always carry both.
    job_labels = {k: v for k, v in marks.items() if len(v) <= MAX_LABEL_VALUE}
    patch = as_object(as_object(steps_of(flow).get(step, {}).get("patch")).get("jobSpec"))
    return {
        "apiVersion": labels.BATCH_API_VERSION,
        "kind": labels.JOB_KIND,
        "metadata": {
            "name": job_name(flow_name, step),
            "namespace": namespace,
            "labels": job_labels,
            "annotations": dict(marks),
            "ownerReferences": [
                {
                    "apiVersion": FLOW_API_VERSION,
                    "kind": JOBFLOW_KIND,
                    "name": flow_name,
                    "uid": meta.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": merge_job_spec(as_object(template.get("spec")), patch),
    }
