"""Network topology tiers, partition policies and runningEstimate."""

from __future__ import annotations

from typing import Any

import pytest

from shared.fielderrors import Path
from shared.models.job import NetworkTopology
from tests.unit.webhook.job.rules.jobspecs import SPEC, found, spec, task
from webhook.job.rules.topology import (
    validate_job_topology,
    validate_network_topology,
    validate_partitions,
)

BOTH = "must not be set together with highestTierAllowed (name one tier or the other)"


@pytest.mark.parametrize(
    ("topology", "expected"),
    [
        pytest.param(None, [], id="none"),
        pytest.param({"mode": "hard", "highestTierAllowed": 2}, [], id="tier"),
        pytest.param({"mode": "hard", "highestTierName": "rack"}, [], id="name"),
        pytest.param(
            {"mode": "hard", "highestTierAllowed": 2, "highestTierName": "rack"},
            [("t.highestTierName", BOTH)],
            id="both",
        ),
    ],
)
def test_validate_network_topology(
    topology: dict[str, Any] | None, expected: list[tuple[str, str]]
) -> None:
    model = NetworkTopology.from_wire(topology) if topology else None
    assert found(validate_network_topology(model, Path.of("t"))) == expected


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param(
            {"replicas": 4, "partitionPolicy": {"totalPartitions": 2, "partitionSize": 2}},
            [],
            id="ok",
        ),
        pytest.param(
            {"replicas": 4, "partitionPolicy": {"partitionSize": 2}},
            [("spec.tasks[0].partitionPolicy.totalPartitions", "")],
            id="no-total",
        ),
        pytest.param(
            {"replicas": 4, "partitionPolicy": {"totalPartitions": 0, "partitionSize": 2}},
            [("spec.tasks[0].partitionPolicy.totalPartitions", "must be greater than 0")],
            id="zero-total",
        ),
        pytest.param(
            {"replicas": 5, "partitionPolicy": {"totalPartitions": 2, "partitionSize": 2}},
            [
                (
                    "spec.tasks[0].replicas",
                    "must equal partitionPolicy.totalPartitions * partitionSize (4)",
                )
            ],
            id="replicas",
        ),
        pytest.param(
            {
                "replicas": 4,
                "minAvailable": 3,
                "partitionPolicy": {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1},
            },
            [
                (
                    "spec.tasks[0].minAvailable",
                    "must equal partitionPolicy.minPartitions * partitionSize (2)",
                )
            ],
            id="min-available",
        ),
        pytest.param(
            {
                "replicas": 4,
                "partitionPolicy": {
                    "totalPartitions": 2,
                    "partitionSize": 2,
                    "networkTopology": {
                        "mode": "hard",
                        "highestTierAllowed": 1,
                        "highestTierName": "r",
                    },
                },
            },
            [("spec.tasks[0].partitionPolicy.networkTopology.highestTierName", BOTH)],
            id="partition-topology",
        ),
    ],
)
def test_validate_partitions(fields: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert found(validate_partitions(spec(task(**fields)), SPEC)) == expected


@pytest.mark.parametrize(
    ("fields", "fields_bad"),
    [
        pytest.param({"runningEstimate": "1h30m"}, [], id="duration"),
        pytest.param({"runningEstimate": "soon"}, ["spec.runningEstimate"], id="not-a-duration"),
        pytest.param(
            {"networkTopology": {"mode": "soft", "highestTierAllowed": 1, "highestTierName": "r"}},
            ["spec.networkTopology.highestTierName"],
            id="job-topology",
        ),
    ],
)
def test_validate_job_topology(fields: dict[str, Any], fields_bad: list[str]) -> None:
    assert [e.field for e in validate_job_topology(spec(task(), **fields), SPEC)] == fields_bad


def test_an_unreadable_running_estimate_is_not_judged_again() -> None:
    the_spec = spec(task(), runningEstimate="soon")
    assert validate_job_topology(the_spec, SPEC, lambda p: str(p) != "spec.runningEstimate") == []
