"""Pod validation as Volcano's webhook manager does it (`/pods/validate`): the disruption budget
annotations of pods that the gang scheduler places."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from shared.fielderrors import FieldError, Path
from webhook.verdict import Verdict

JDB_MIN_AVAILABLE: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE: Final = "volcano.sh/jdb-max-unavailable"
BUDGET_KEYS: Final = (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE)
_INTEGER: Final = re.compile(r"^[+-]?[0-9]+$")
_PERCENT: Final = re.compile(r"^[0-9]+%$")


def _budget_value(key: str, value: str, path: Path, verdict: Verdict) -> None:
    """A positive integer, or a percentage strictly between 0% and 100%."""
    if _INTEGER.match(value):
        if int(value) <= 0:
            verdict.errors.append(
                FieldError.invalid(
                    path,
                    value,
                    f'invalid value <"{value}"> for {key}, it must be a positive integer',
                )
            )
        return
    digits = value.replace("%", "")
    if not digits.isdigit():
        verdict.errors.append(
            FieldError.invalid(
                path,
                value,
                f"invalid value for {key}: must be a positive integer or a percentage "
                "between 1% and 99%",
            )
        )
        return
    number = int(digits)
    if number <= 0 or number >= 100:
        verdict.errors.append(
            FieldError.invalid(
                path,
                value,
                f'invalid value <"{value}"> for {key}, it must be a valid percentage which '
                "between 1% ~ 99%",
            )
        )
    elif not _PERCENT.match(value):
        # Volcano drops every "%" wherever it is; the scheduler reads the value the same way.
        verdict.warnings.append(
            f"{path}: {value!r} is read as {number}%; write it as {number}% "
            "(one percent sign, at the end)"
        )


def validate_pod(pod: Any, scheduler_names: tuple[str, ...]) -> Verdict:
    """A pod on CREATE: only pods for the gang scheduler are judged."""
    verdict = Verdict()
    if not isinstance(pod, dict):
        return verdict
    spec = pod.get("spec")
    scheduler = spec.get("schedulerName") if isinstance(spec, dict) else None
    if scheduler not in scheduler_names:
        return verdict
    metadata = pod.get("metadata")
    annotations: Mapping[str, Any] = {}
    if isinstance(metadata, dict) and isinstance(metadata.get("annotations"), dict):
        annotations = metadata["annotations"]
    path = Path.of("metadata", "annotations")
    present = [key for key in BUDGET_KEYS if key in annotations]
    for key in present:
        _budget_value(key, str(annotations[key]), path.key(key), verdict)
    if len(present) > 1:
        verdict.errors.append(
            FieldError.forbidden(
                path.key(JDB_MAX_UNAVAILABLE),
                f"not allow configure multiple annotations <[{' '.join(BUDGET_KEYS)}]> at same "
                "time: set either a minimum available or a maximum unavailable",
            )
        )
    return verdict
