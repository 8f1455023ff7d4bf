"""Volcano's phrases for Job rules, kept beside vcjob's own detail so that scripts and suites that
look for Volcano's words find them in every denial."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from shared.fielderrors import ErrorType, FieldError, Path

IMMUTABLE: Final = (
    "field is immutable: job updates may not change fields other than minAvailable, "
    "priorityClassName, and the tasks' replicas, minAvailable, minReplicas and maxReplicas"
)


def unsupported(path: Path, value: Any, supported: Iterable[str], phrase: str) -> FieldError:
    """`Unsupported value: <value>: <phrase>; supported values: …`."""
    listed = ", ".join(json.dumps(s) for s in supported)
    return FieldError(
        ErrorType.NOT_SUPPORTED, str(path), f"{phrase}; supported values: {listed}", value, True
    )
