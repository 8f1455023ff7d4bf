"""Where a Job's pods may run: network topology tiers (job and partitions), the partition
policy against replicas and minAvailable, and runningEstimate."""

from __future__ import annotations

from shared.duration import parse_duration
from shared.fielderrors import FieldError, Path
from shared.models.job import JobSpec, NetworkTopology
from webhook.job.reading import Readable, everything


def validate_network_topology(topology: NetworkTopology | None, path: Path) -> list[FieldError]:
    """A tier is named one way: highestTierAllowed or highestTierName."""
    if topology is None:
        return []
    if topology.highest_tier_allowed is not None and topology.highest_tier_name:
        return [
            FieldError.forbidden(
                path.child("highestTierName"),
                "must not be set together with highestTierAllowed (name one tier or the other)",
            )
        ]
    return []


def validate_partitions(spec: JobSpec, path: Path) -> list[FieldError]:
    """partitionPolicy against replicas and minAvailable, first failure per task, as Volcano
    checks it on CREATE and UPDATE; then the partition's networkTopology."""
    errors: list[FieldError] = []
    for i, task in enumerate(spec.tasks):
        policy = task.partition_policy
        if policy is None:
            continue
        where = path.child("tasks").index(i)
        at = where.child("partitionPolicy")
        total, size = policy.total_partitions, policy.partition_size
        if total is None:
            errors.append(FieldError.required(at.child("totalPartitions"), ""))
        elif total <= 0:
            errors.append(
                FieldError.invalid(at.child("totalPartitions"), total, "must be greater than 0")
            )
        elif size is None:
            errors.append(FieldError.required(at.child("partitionSize"), ""))
        elif size <= 0:
            errors.append(
                FieldError.invalid(at.child("partitionSize"), size, "must be greater than 0")
            )
        elif task.replica_count != total * size:
            errors.append(
                FieldError.invalid(
                    where.child("replicas"),
                    task.replica_count,
                    f"must equal partitionPolicy.totalPartitions * partitionSize ({total * size})",
                )
            )
        elif (
            task.min_available is not None
            and (policy.min_partitions or 0) > 0
            and (policy.min_partitions or 0) * size != task.min_available
        ):
            wanted = (policy.min_partitions or 0) * size
            errors.append(
                FieldError.invalid(
                    where.child("minAvailable"),
                    task.min_available,
                    f"must equal partitionPolicy.minPartitions * partitionSize ({wanted})",
                )
            )
        errors.extend(
            validate_network_topology(policy.network_topology, at.child("networkTopology"))
        )
    return errors


def validate_job_topology(
    spec: JobSpec, path: Path, readable: Readable = everything
) -> list[FieldError]:
    """The job's networkTopology tiers, and runningEstimate as a Go duration."""
    errors = validate_network_topology(spec.network_topology, path.child("networkTopology"))
    estimate = spec.running_estimate
    where = path.child("runningEstimate")
    if estimate is not None and readable(where):
        try:
            parse_duration(estimate)
        except ValueError as err:
            errors.append(FieldError.invalid(where, estimate, str(err)))
    return errors
