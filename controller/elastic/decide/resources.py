"""Resource amounts for the elastic autoscaler: a pod spec's requests or limits, sums and
shortfalls, and how an amount reads in a decision's reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from shared import quantity

Resources = Mapping[str, Decimal]


CPU: Final = "cpu"


MEMORY: Final = "memory"


def parse_amounts(raw: Any) -> dict[str, Decimal]:
    return quantity.parse_resource_list(raw)


def _add(*amounts: Resources) -> dict[str, Decimal]:
    return quantity.add_quantities(*(dict(a) for a in amounts))


def _elementwise_max(amounts: Iterable[Resources]) -> dict[str, Decimal]:
    return quantity.max_quantities(amounts)


def _container_amounts(container: Any, primary: str) -> dict[str, Decimal]:
    """A container's requests (`primary="requests"`) or limits, each falling back to the other.

    The API server defaults requests to limits; a missing limit is counted as the request, the
    least a container can take.
    """
    if not isinstance(container, Mapping):
        return {}
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        return {}
    secondary = "limits" if primary == "requests" else "requests"
    amounts = parse_amounts(resources.get(secondary))
    amounts.update(parse_amounts(resources.get(primary)))
    return amounts


def pod_spec_amounts(pod_spec: Any, primary: str) -> dict[str, Decimal]:
    """Requests or limits of a pod: max(Σ containers, largest init container) + overhead."""
    if not isinstance(pod_spec, Mapping):
        return {}
    containers = _add(*(_container_amounts(c, primary) for c in pod_spec.get("containers") or []))
    init = _elementwise_max(
        _container_amounts(c, primary) for c in pod_spec.get("initContainers") or []
    )
    return _add(_elementwise_max([containers, init]), parse_amounts(pod_spec.get("overhead")))


def sum_amounts(loads: Iterable[Mapping[str, Decimal]]) -> dict[str, Decimal]:
    return quantity.add_quantities(*(dict(load) for load in loads))


def describe(amounts: Mapping[str, Decimal], gpu: str) -> str:
    """`2 GPUs`, `1500m CPU and 3Gi memory`: the amounts a reason speaks of."""
    parts = []
    if gpu in amounts:
        count = amounts[gpu]
        parts.append(f"{_number(count)} GPU{'' if count == 1 else 's'}")
    if CPU in amounts:
        parts.append(f"{_cpu(amounts[CPU])} CPU")
    if MEMORY in amounts:
        parts.append(f"{_memory(amounts[MEMORY])} memory")
    return " and ".join(parts)


def _number(value: Decimal) -> str:
    return format(value.normalize(), "f") if value != value.to_integral_value() else str(int(value))


def _cpu(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    return f"{_number(value * 1000)}m"


def _memory(value: Decimal) -> str:
    for suffix, power in (("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
        scaled = value / (Decimal(1024) ** power)
        if value != 0 and scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return _number(value)


def shortfall(available: Mapping[str, Decimal], dims: Iterable[str]) -> dict[str, Decimal]:
    return {d: -available[d] for d in dims if available.get(d, Decimal(0)) < 0}
