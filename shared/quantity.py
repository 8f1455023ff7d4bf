"""Kubernetes resource quantities, parsed by the official client's parser."""

from __future__ import annotations

from decimal import Decimal

from kubernetes.utils.quantity import format_quantity, parse_quantity

__all__ = ["add_quantities", "format_quantity", "parse", "parse_quantity", "try_parse"]


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
