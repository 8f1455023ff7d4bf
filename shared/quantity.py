"""Kubernetes resource quantities, parsed by the official client's parser."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import format_quantity, parse_quantity

__all__ = [
    "add_quantities",
    "format_quantity",
    "max_quantities",
    "parse",
    "parse_quantity",
    "parse_resource_list",
    "try_parse",
]


def parse(value: str | int | float) -> Decimal:
    """Parse `"500m"`, `"2Gi"`, `4`…; raises ValueError with the client's message when malformed."""
    parsed: Decimal = parse_quantity(value)  # type: ignore[no-untyped-call]
    return parsed


def try_parse(value: object) -> Decimal | None:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        return parse(value)
    except (ValueError, TypeError, ArithmeticError):
        return None


def add_quantities(*amounts: dict[str, Decimal]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for amount in amounts:
        for name, value in amount.items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


def max_quantities(amounts: Iterable[Mapping[str, Decimal]]) -> dict[str, Decimal]:
    """The largest amount of each resource (how init containers count against a pod)."""
    result: dict[str, Decimal] = {}
    for amount in amounts:
        for name, value in amount.items():
            result[name] = max(result.get(name, Decimal(0)), value)
    return result


def parse_resource_list(raw: Any) -> dict[str, Decimal]:
    """A corev1.ResourceList's amounts by resource name; values that are not quantities (and a
    list that is not a map) are left out: the validator reports them."""
    parsed: dict[str, Decimal] = {}
    if not isinstance(raw, Mapping):
        return parsed
    for name, value in raw.items():
        amount = try_parse(value)
        if amount is not None:
            parsed[str(name)] = amount
    return parsed
