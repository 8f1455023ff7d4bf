"""Which of the controller's loops run: Volcano's `--controllers` gates, as a pure function."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

# Volcano's controller names that vcjob runs; the job controller cannot be turned off.
JOB_CONTROLLER: Final = "job-controller"
KNOWN: Final = (
    "job-controller",
    "pg-controller",
    "queue-controller",
    "cronjob-controller",
    "jobflow-controller",
)


class GateError(ValueError):
    """The gates name an unknown controller, or one both on and off."""


def parse_gates(text: str) -> tuple[str, ...]:
    """`*,-pg-controller` → the gates; refuses unknown names, a name both on and off, and
    turning the job controller off."""
    gates = tuple(g.strip() for g in text.split(",") if g.strip())
    seen: set[str] = set()
    for gate in gates:
        if gate == "*":
            continue
        name = gate[1:] if gate[:1] in "+-" else gate
        if name not in KNOWN:
            raise GateError(f"unknown controller {name!r} in {gate!r}; known: {', '.join(KNOWN)}")
        if name in seen:
            raise GateError(f"controllers option {gate} cannot have both '-' and '+' prefixes")
        seen.add(name)
        if gate == f"-{JOB_CONTROLLER}":
            raise GateError("the job controller cannot be turned off")
    return gates


def enabled(name: str, gates: Iterable[str]) -> bool:
    """Volcano's rule: `-name` turns it off, `name` or `+name` on, `*` turns on every one not
    turned off."""
    listed = set(gates)
    if f"-{name}" in listed:
        return False
    if name in listed or f"+{name}" in listed:
        return True
    return "*" in listed
