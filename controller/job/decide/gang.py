"""The gang gate: pods are created only once the gang scheduler admitted the PodGroup."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.job.decide import podgroup
from shared import labels


def gate_open(
    scheduler_name: str | None,
    gang_schedulers: frozenset[str],
    pod_group: Mapping[str, Any] | None,
) -> bool:
    """Schedulers outside `gang_schedulers` get their pods at once; a gang scheduler's pods
    wait for the PodGroup to be admitted (Inqueue, Running, …)."""
    if (scheduler_name or labels.DEFAULT_SCHEDULER) not in gang_schedulers:
        return True
    return podgroup.is_admitted(pod_group)
