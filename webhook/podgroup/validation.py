"""PodGroup validation as Volcano's webhook manager does it (`/podgroups/validate`): PodGroups only
into Open queues, and one network tier named at a time."""

from __future__ import annotations

from typing import Any

from shared.fielderrors import FieldError, Path
from shared.models import Queue


def validate_queue_open(queue_name: Any, queue: Queue | None, path: Path) -> list[FieldError]:
    """The PodGroup's queue exists and is Open (a queue no controller has given a state yet
    counts as Open, as for Jobs)."""
    if queue_name in (None, ""):
        return []
    if queue is None:
        return [
            FieldError.not_found(
                path,
                queue_name,
                f'unable to find queue: queue.scheduling.volcano.sh "{queue_name}" not found',
            )
        ]
    if not queue.is_open:
        state = queue.status.state if queue.status else ""
        return [
            FieldError.invalid(
                path,
                queue_name,
                f"can only submit PodGroup to queue with state `Open`, queue `{queue_name}` "
                f"status is `{state}`",
            )
        ]
    return []


def validate_network_topology(topology: Any, path: Path, where: str = "") -> list[FieldError]:
    if not isinstance(topology, dict):
        return []
    if topology.get("highestTierAllowed") is not None and topology.get("highestTierName"):
        return [
            FieldError.forbidden(
                path.child("highestTierName"),
                f"{where}must not specify 'highestTierAllowed' and 'highestTierName' in "
                "networkTopology simultaneously",
            )
        ]
    return []


def validate_podgroup(podgroup: Any, queue: Queue | None, check_queue: bool) -> list[FieldError]:
    """A PodGroup on CREATE: every problem at once."""
    spec = podgroup.get("spec") if isinstance(podgroup, dict) else None
    if not isinstance(spec, dict):
        spec = {}
    spec_path = Path.of("spec")
    errors: list[FieldError] = []
    if check_queue:
        errors += validate_queue_open(spec.get("queue"), queue, spec_path.child("queue"))
    errors += validate_network_topology(
        spec.get("networkTopology"), spec_path.child("networkTopology")
    )
    policies = spec.get("subGroupPolicy")
    if isinstance(policies, list):
        for i, policy in enumerate(policies):
            if isinstance(policy, dict):
                errors += validate_network_topology(
                    policy.get("networkTopology"),
                    spec_path.child("subGroupPolicy").index(i).child("networkTopology"),
                    f"in subGroupPolicy '{policy.get('name') or ''}': ",
                )
    return errors
