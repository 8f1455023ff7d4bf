"""A rule's outcome when it can also admit with a warning."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.fielderrors import FieldError


@dataclass
class Verdict:
    """Problems that deny the request, and warnings the API server passes on to the client
    (kubectl prints them as `Warning: …`) for what Volcano admits but is likely a mistake."""

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
