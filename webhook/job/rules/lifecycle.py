"""Admission rules of vcjob's lifecycle fields (docs/lifecycle.md): `spec.activeDeadlineSeconds`
and `spec.retryPolicy`. Their types and bounds (> 0, >= 0) come from the model; these are the
rules between fields and between the old and the new object."""

from __future__ import annotations

from typing import Any, Final

from shared.fielderrors import FieldError, Path

DEADLINE: Final = "activeDeadlineSeconds"
RETRY_POLICY: Final = "retryPolicy"
# Fields an update may change (within the rules below); the other immutability checks skip them.
MUTABLE_FIELDS: Final = (DEADLINE, RETRY_POLICY)
# Phases in which the deadline is still free to change: the job has not run yet.
NOT_STARTED: Final = frozenset({"", "Pending"})

SPEC: Final = Path.of("spec")


def _spec(job: Any) -> dict[str, Any]:
    spec = job.get("spec") if isinstance(job, dict) else None
    return spec if isinstance(spec, dict) else {}


def validate_spec(job: Any) -> list[FieldError]:
    """`retryPolicy.backoff.capSeconds` is not below `baseSeconds`."""
    policy = _spec(job).get(RETRY_POLICY)
    backoff = policy.get("backoff") if isinstance(policy, dict) else None
    if not isinstance(backoff, dict):
        return []
    base, cap = backoff.get("baseSeconds"), backoff.get("capSeconds")
    if isinstance(base, int) and isinstance(cap, int) and cap < base:
        where = SPEC.child(RETRY_POLICY, "backoff", "capSeconds")
        return [FieldError.invalid(where, cap, f"must not be less than baseSeconds ({base})")]
    return []


def validate_update(old: Any, new: Any, phase: str | None) -> list[FieldError]:
    """Once the job has started, `activeDeadlineSeconds` may only be lowered (or set where it
    was unset): a deadline never moves away from a running job."""
    errors = validate_spec(new)
    if (phase or "") in NOT_STARTED:
        return errors
    before, after = _spec(old).get(DEADLINE), _spec(new).get(DEADLINE)
    if before is None or before == after:
        return errors
    where = SPEC.child(DEADLINE)
    if after is None:
        errors.append(FieldError.forbidden(where, f"cannot be removed once the job ran ({phase})"))
    elif isinstance(after, int) and isinstance(before, int) and after > before:
        errors.append(
            FieldError.invalid(
                where, after, f"may only be lowered once the job ran (it is {before}s)"
            )
        )
    return errors


def without_mutable(job: dict[str, Any]) -> dict[str, Any]:
    """`job` without the lifecycle fields in its spec, for the immutability comparison."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return job
    return {**job, "spec": {k: v for k, v in spec.items() if k not in MUTABLE_FIELDS}}
