"""Rules of the fields that say who runs a Job and whether it runs now: `spec.managedBy` (set at
creation, immutable afterwards, as the Kubernetes Job's) and `spec.suspend` (mutable; the schema
already requires a boolean)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from shared.fielderrors import FieldError, Path

MANAGED_BY: Final = Path.of("spec", "managedBy")
MANAGED_BY_MAX_LENGTH: Final = 63
# A domain-prefixed path, `example.com/name`, as the Kubernetes Job's managedBy.
_DOMAIN_PREFIXED: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$"
)


def _spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = job.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def create_errors(job: Mapping[str, Any]) -> list[FieldError]:
    """managedBy, when set, is a domain-prefixed path of at most 63 characters."""
    value = _spec(job).get("managedBy")
    if value is None:
        return []
    if not isinstance(value, str):
        return [FieldError.invalid(MANAGED_BY, value, "must be a string")]
    if len(value) > MANAGED_BY_MAX_LENGTH:
        return [FieldError.too_long(MANAGED_BY, MANAGED_BY_MAX_LENGTH)]
    if not _DOMAIN_PREFIXED.match(value):
        return [
            FieldError.invalid(
                MANAGED_BY, value, "must be a domain-prefixed path (such as example.com/name)"
            )
        ]
    return []


def update_errors(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """managedBy cannot be set, changed or removed after creation."""
    before, after = _spec(old).get("managedBy"), _spec(new).get("managedBy")
    if before != after:
        return [FieldError.invalid(MANAGED_BY, after, "field is immutable")]
    return []
