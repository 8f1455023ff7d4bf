"""Resource amounts (cpu, memory, pods, extended resources) as exact decimals."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from shared import podresources, quantity

Resources = Mapping[str, Decimal]

# Every pod takes one of the node's pod slots, like kube-scheduler's NodeResourcesFit.
POD_SLOT = "pods"


def parse_resources(raw: Mapping[str, Any] | None) -> dict[str, Decimal]:
    """`{"cpu": "500m", "memory": "1Gi"}` → decimals; malformed amounts count as zero.

    Quota-style keys are normalised: `requests.cpu` counts as `cpu` (Volcano's minResources
    carry both, with the same amount, so they are not added up); `limits.*` and `count/*` are not
    scheduling resources and are left out.
    """
    parsed: dict[str, Decimal] = {}
    for name, value in (raw or {}).items():
        key = str(name)
        if key.startswith(("limits.", "count/")):
            continue
        key = key.removeprefix("requests.")
        amount = quantity.try_parse(value)
        if amount is not None:
            parsed[key] = max(parsed.get(key, amount), amount)
    return parsed


def add(*amounts: Resources) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for amount in amounts:
        for name, value in amount.items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


def subtract(left: Resources, right: Resources) -> dict[str, Decimal]:
    result = dict(left)
    for name, value in right.items():
        result[name] = result.get(name, Decimal(0)) - value
    return result


def clamp_at_zero(amount: Resources) -> dict[str, Decimal]:
    return {name: max(value, Decimal(0)) for name, value in amount.items()}


def covers(available: Resources, wanted: Resources) -> bool:
    """Whether every positive amount in `wanted` is available (missing resources count as 0)."""
    return all(value <= available.get(name, Decimal(0)) for name, value in wanted.items() if value)


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """What a pod asks of its node, as kube-scheduler counts it: Kubernetes' PodRequests (the
    containers, sidecars and init containers, or the pod-level resources where set) + overhead."""
    effective = add(podresources.pod_requests(pod_spec), parse_resources(pod_spec.get("overhead")))
    effective[POD_SLOT] = Decimal(1)
    return effective
