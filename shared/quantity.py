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
    "render",
    "suffix_style",
    "try_parse",
]

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


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


def suffix_style(raw: Any) -> str:
    """How a quantity was written: `binary` (Gi…), `decimal` (G…) or `plain`."""
    text = str(raw)
    if text.endswith("i"):
        return "binary"
    if text[-1:] in "kMGTPE" and text[-1:]:
        return "decimal"
    return "plain"


def render(value: Decimal, style: str = "plain") -> str:
    """Kubernetes-like canonical text, keeping the suffix family the user wrote (2Gi, 3G)."""
    if value == value.to_integral_value():
        units = _BINARY if style == "binary" else _DECIMAL if style == "decimal" else ()
        for suffix, unit in units:
            if value >= unit and value % unit == 0:
                return f"{int(value // unit)}{suffix}"
        return str(int(value))
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return str(value.normalize())
