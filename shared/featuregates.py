"""Volcano's alpha feature gates that vcjob honours, named and written as Kubernetes'
`--feature-gates` (`Name=true,Other=false`), all off by default as in Volcano."""

from __future__ import annotations

from typing import Final

SCHEDULING_GATES_QUEUE_ADMISSION: Final = "SchedulingGatesQueueAdmission"
# Volcano's feature gates the webhook knows, all off by default as in Volcano.
KNOWN_FEATURE_GATES: Final = (SCHEDULING_GATES_QUEUE_ADMISSION,)


def parse_feature_gates(text: str) -> frozenset[str]:
    """`Name=true,Other=false` (Kubernetes' --feature-gates form) → the names turned on; raises
    ValueError naming what is wrong."""
    enabled: set[str] = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise ValueError(f"{item!r}: write a gate as Name=true or Name=false")
        if name not in KNOWN_FEATURE_GATES:
            raise ValueError(
                f"unknown feature gate {name!r}; known: {', '.join(KNOWN_FEATURE_GATES)}"
            )
        if value.lower() == "true":
            enabled.add(name)
        else:
            enabled.discard(name)
    return frozenset(enabled)
