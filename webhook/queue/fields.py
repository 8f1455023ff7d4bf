"""A Queue's own fields, as Volcano's webhook manager checks them: its resources (capability >=
deserved >= guarantee), its weight and the state a user may set. Messages contain Volcano's own
phrases (`must be >= guarantee`, `must be <= capability`)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from shared import quantity
from shared.fielderrors import FieldError, Path

SETTABLE_STATES: Final = ("Open", "Closed")


def _quantities(value: Any, path: Path, errors: list[FieldError]) -> dict[str, tuple[Any, Decimal]]:
    """The resource list's valid quantities by name; each malformed or negative one is reported."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(
            FieldError.invalid(path, value, "must be a map of resource names to quantities")
        )
        return {}
    out: dict[str, tuple[Any, Decimal]] = {}
    for name, raw in value.items():
        parsed = quantity.try_parse(raw)
        if parsed is None:
            errors.append(
                FieldError.invalid(
                    path.key(name),
                    raw,
                    "quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )
            )
        elif parsed < 0:
            errors.append(
                FieldError.invalid(path.key(name), raw, "must be greater than or equal to 0")
            )
        else:
            out[name] = (raw, parsed)
    return out


def _text(raw: Any) -> str:
    return str(raw)


def validate_resources(spec: Mapping[str, Any], path: Path) -> list[FieldError]:
    """capability >= deserved >= guarantee, resource by resource; every quantity valid and >= 0.

    A guaranteed resource needs a deserved amount at least as large (Volcano: a guarantee with no
    deserved amount is refused); a resource missing from capability is not capped.
    """
    errors: list[FieldError] = []
    capability = _quantities(spec.get("capability"), path.child("capability"), errors)
    deserved = _quantities(spec.get("deserved"), path.child("deserved"), errors)
    guarantee_block = spec.get("guarantee")
    guarantee_raw = guarantee_block.get("resource") if isinstance(guarantee_block, dict) else None
    guarantee = _quantities(guarantee_raw, path.child("guarantee", "resource"), errors)
    for name, (g_raw, g_value) in guarantee.items():
        where = path.child("deserved").key(name)
        if name not in deserved:
            errors.append(
                FieldError.required(
                    where,
                    f"deserved[{name}] must be >= guarantee[{name}]={_text(g_raw)} "
                    "(a guaranteed resource needs a deserved amount)",
                )
            )
            continue
        d_raw, d_value = deserved[name]
        if d_value < g_value:
            errors.append(
                FieldError.invalid(
                    where,
                    d_raw,
                    f"deserved[{name}]={_text(d_raw)} must be >= guarantee[{name}]={_text(g_raw)}",
                )
            )
    for name, (d_raw, d_value) in deserved.items():
        if name in capability and d_value > capability[name][1]:
            c_raw = capability[name][0]
            errors.append(
                FieldError.invalid(
                    path.child("deserved").key(name),
                    d_raw,
                    f"deserved[{name}]={_text(d_raw)} must be <= capability[{name}]={_text(c_raw)}",
                )
            )
    return errors


def validate_weight(spec: Mapping[str, Any], path: Path) -> list[FieldError]:
    weight = spec.get("weight")
    if weight is None:
        return []
    if isinstance(weight, bool) or not isinstance(weight, int):
        return [FieldError.invalid(path.child("weight"), weight, "must be an integer")]
    if weight < 1:
        return [
            FieldError.invalid(path.child("weight"), weight, "should be greater than or equal to 1")
        ]
    return []


def validate_state(new_state: Any, old_state: Any, path: Path) -> list[FieldError]:
    """A state written by a user (create, or a change on update) is Open or Closed; the
    controller's own states (Closing, Unknown) already stored are not held against an update."""
    if new_state in (None, "") or new_state == old_state:
        return []
    if new_state not in SETTABLE_STATES:
        return [
            FieldError.invalid(
                path,
                new_state,
                f"queue state must be in [{' '.join(SETTABLE_STATES)}]",
            )
        ]
    return []
