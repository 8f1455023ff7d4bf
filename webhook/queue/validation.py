"""A Queue on CREATE or UPDATE (`/queues/validate`): which rules run, on what; every problem at
once, each with its field path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.fielderrors import FieldError, Path
from webhook.queue.fields import validate_resources, validate_state, validate_weight
from webhook.queue.hierarchy import (
    HIERARCHY,
    QueueContext,
    validate_ancestor_capability,
    validate_children_shares,
    validate_depth,
    validate_hierarchy,
    validate_hierarchy_place,
    validate_parent,
    validate_parent_pods,
    validate_root_shares,
    validate_sibling_shares,
)


def _spec(queue: Any) -> Mapping[str, Any]:
    spec = queue.get("spec") if isinstance(queue, dict) else None
    return spec if isinstance(spec, dict) else {}


def _annotations(queue: Any) -> Mapping[str, Any]:
    metadata = queue.get("metadata") if isinstance(queue, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _state(queue: Any) -> Any:
    status = queue.get("status") if isinstance(queue, dict) else None
    return status.get("state") if isinstance(status, dict) else None


def _name(queue: Any) -> str:
    metadata = queue.get("metadata") if isinstance(queue, dict) else None
    return str(metadata.get("name") or "") if isinstance(metadata, dict) else ""


def validate_queue(new: Any, old: Any, context: QueueContext) -> list[FieldError]:
    """A Queue on CREATE (`old` None) or UPDATE: every problem at once."""
    spec_path = Path.of("spec")
    spec = _spec(new)
    name = _name(new)
    annotations = _annotations(new)
    errors = validate_weight(spec, spec_path)
    errors += validate_resources(spec, spec_path)
    errors += validate_state(
        _state(new), _state(old) if old is not None else None, Path.of("status", "state")
    )
    annotation_path = Path.of("metadata", "annotations")
    errors += validate_hierarchy(annotations, annotation_path)
    errors += validate_hierarchy_place(
        name, annotations.get(HIERARCHY), context.hierarchies, annotation_path
    )
    old_spec = _spec(old) if old is not None else None
    if old_spec is None or old_spec.get("parent") != spec.get("parent"):
        errors += validate_parent(
            name, spec.get("parent"), context.parent_exists, spec_path.child("parent")
        )
        if spec.get("parent") != name:
            errors += validate_depth(
                name, spec.get("parent"), len(context.ancestors), spec_path.child("parent")
            )
            errors += validate_parent_pods(
                name, spec.get("parent"), context.parent_pods, spec_path.child("parent")
            )
    if old_spec is None or any(old_spec.get(k) != spec.get(k) for k in ("parent", "capability")):
        errors += validate_ancestor_capability(
            name, spec.get("capability"), context.ancestors, spec_path.child("capability")
        )
    # As Volcano: the hierarchy's sums are checked on CREATE and when a share or the parent
    # changes, so queues stored before the rule keep being updatable otherwise.
    if name == "root" and old_spec is not None:
        errors += validate_root_shares(old_spec, spec)
    shares = ("parent", "capability", "deserved", "guarantee")
    if old_spec is None or any(old_spec.get(k) != spec.get(k) for k in shares):
        errors += validate_sibling_shares(
            name, spec, context.parent_shares, context.siblings, spec_path
        )
        errors += validate_children_shares(
            name, spec, context.children, context.descendant_capabilities, spec_path
        )
    return errors
