"""Pod templates: normalising, comparing and hashing them, and naming ReplicaSets after them."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from localcluster.controllers.workloads.objects import (
    POD_TEMPLATE_HASH,
    SAFE_ALPHABET,
    created_order,
    spec_of,
)


def normalized(value: Any) -> Any:
    """`value` without null, empty, false or "" fields, recursively: two templates that kube
    would call semantically equal (absent and zero-valued fields alike, as after a trip through
    kubectl's typed structs) normalize to the same thing."""
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            item = normalized(item)
            if item is None or item is False or item == "" or item == {} or item == []:
                continue
            result[str(key)] = item
        return result
    if isinstance(value, list | tuple):
        return [normalized(item) for item in value]
    return value


def _without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(dict(template))
    labels = (stripped.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH, None)
    normal: dict[str, Any] = normalized(stripped)
    return normal


def templates_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """kube's EqualIgnoreHash: the same pod template, `pod-template-hash` label aside."""
    return _without_hash(a) == _without_hash(b)


def _fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """apimachinery's rand.SafeEncodeString: each character mapped into SAFE_ALPHABET."""
    return "".join(SAFE_ALPHABET[ord(char) % len(SAFE_ALPHABET)] for char in text)


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """A short stable name for a pod template (up to 10 characters of [a-z0-9], like kube's):
    FNV-32a of its canonical JSON, `pod-template-hash` label and empty fields aside."""
    canonical = json.dumps(_without_hash(template), sort_keys=True, separators=(",", ":"))
    if collision_count:
        canonical += f"#{collision_count}"
    return safe_encode(str(_fnv32a(canonical.encode())))


def replica_set_name(deployment_name: str, pod_template_hash: str) -> str:
    return f"{deployment_name}-{pod_template_hash}"


ReplicaSet = TypeVar("ReplicaSet", bound=Mapping[str, Any])


def find_new_replica_set(
    deployment: Mapping[str, Any], replica_sets: Iterable[ReplicaSet]
) -> ReplicaSet | None:
    """The oldest ReplicaSet whose template is the Deployment's (kube's FindNewReplicaSet)."""
    template = spec_of(deployment).get("template") or {}
    for rs in sorted(replica_sets, key=created_order):
        if templates_equal(spec_of(rs).get("template") or {}, template):
            return rs
    return None
