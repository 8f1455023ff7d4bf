"""Today's Volcano Job API in the webhook: partitionPolicy rules and defaulting, networkTopology,
runningEstimate, RestartPartition, and the ray/hcclrank plugins with Volcano's flags."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.job.create import validate_create
from webhook.job.defaulting import default_job
from webhook.job.rules.wording import IMMUTABLE
from webhook.job.update import validate_update
from webhook.settings import Settings

SETTINGS = Settings()
Raw = dict[str, Any]
T = "spec.tasks[0]"
BOTH_TIERS = "must not be set together with highestTierAllowed (name one tier or the other)"


def task(replicas: int = 8, **fields: Any) -> Raw:
    return {
        "name": "worker",
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        **fields,
    }


def job(*tasks: Raw, **spec: Any) -> Raw:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "job", "namespace": "ns"},
        "spec": {"tasks": list(tasks) or [task()], **spec},
    }


def partitioned(replicas: int = 8, min_available: int | None = None, **policy: Any) -> Raw:
    fields: Raw = {
        "partitionPolicy": {"totalPartitions": 2, "partitionSize": 4, **policy},
    }
    if min_available is not None:
        fields["minAvailable"] = min_available
    return job(task(replicas, **fields))


def create_errors(raw: Raw) -> list[str]:
    return [str(e) for e in validate_create(raw, None, SETTINGS)]


CREATE_CASES = [
    pytest.param(partitioned(), [], id="valid partitions"),
    pytest.param(partitioned(minPartitions=1), [], id="minPartitions defaults minAvailable"),
    pytest.param(partitioned(min_available=8, minPartitions=2), [], id="matching minAvailable"),
    pytest.param(
        partitioned(minPartitions=3),
        [
            f"{T}.minAvailable: Invalid value: 12: 'minAvailable' is greater than 'replicas' in "
            "task worker: must be less than or equal to replicas (8)"
        ],
        id="more partitions required than exist: the defaulted minAvailable says so",
    ),
    pytest.param(
        partitioned(totalPartitions=0),
        [f"{T}.partitionPolicy.totalPartitions: Invalid value: 0: must be greater than 0"],
        id="totalPartitions > 0",
    ),
    pytest.param(
        partitioned(totalPartitions=0, partitionSize=0),
        [f"{T}.partitionPolicy.totalPartitions: Invalid value: 0: must be greater than 0"],
        id="first failure only",
    ),
    pytest.param(
        partitioned(partitionSize=-1),
        [f"{T}.partitionPolicy.partitionSize: Invalid value: -1: must be greater than 0"],
        id="partitionSize > 0",
    ),
    pytest.param(
        partitioned(replicas=6),
        [
            f"{T}.replicas: Invalid value: 6: must equal partitionPolicy.totalPartitions * "
            "partitionSize (8)"
        ],
        id="replicas = total * size",
    ),
    pytest.param(
        partitioned(min_available=5, minPartitions=1),
        [
            f"{T}.minAvailable: Invalid value: 5: must equal partitionPolicy.minPartitions * "
            "partitionSize (4)"
        ],
        id="minAvailable = minPartitions * size",
    ),
    pytest.param(
        partitioned(min_available=5),
        [],
        id="minPartitions 0 leaves minAvailable free",
    ),
    pytest.param(
        partitioned(networkTopology={"highestTierAllowed": 1, "highestTierName": "rack"}),
        [f"{T}.partitionPolicy.networkTopology.highestTierName: Forbidden: {BOTH_TIERS}"],
        id="partition topology tiers exclusive",
    ),
    pytest.param(
        job(networkTopology={"mode": "soft", "highestTierAllowed": 2}), [], id="job topology"
    ),
    pytest.param(
        job(networkTopology={"highestTierAllowed": 1, "highestTierName": "rack"}),
        [f"spec.networkTopology.highestTierName: Forbidden: {BOTH_TIERS}"],
        id="job topology tiers exclusive",
    ),
    pytest.param(job(runningEstimate="1h30m"), [], id="running estimate"),
    pytest.param(
        job(runningEstimate="1d"),
        [
            'spec.runningEstimate: Invalid value: "1d": invalid duration "1d": use a number '
            "with a unit (ns, us, ms, s, m, h)"
        ],
        id="running estimate is a Go duration",
    ),
    pytest.param(
        job(task(policies=[{"event": "PodFailed", "action": "RestartPartition"}])),
        [],
        id="RestartPartition is an action",
    ),
    pytest.param(
        job(
            task(1, name="head"),
            task(2, name="worker"),
            plugins={"ray": ["--port=6380", "--headContainer=c", "--workerContainer=c"]},
        ),
        [],
        id="ray",
    ),
    pytest.param(
        job(task(1, name="master"), task(2), plugins={"hcclrank": ["--master=master"]}),
        [],
        id="hcclrank",
    ),
    pytest.param(job(plugins={"ssh": ["--ssh-port=2222"]}), [], id="ssh port"),
    pytest.param(
        job(plugins={"pytorch": ["--wait-master-enabled", "--wait-master-timeout=10"]}),
        [],
        id="pytorch wait flags",
    ),
    pytest.param(
        # Admitted with a warning (webhook.job.rules.job_warnings), as Volcano admits it.
        job(plugins={"svc": ["--inject-hosts-env", "false"]}),
        [],
        id="bool flag value must be attached",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), CREATE_CASES)
def test_create(raw: Raw, expected: list[str]) -> None:
    assert create_errors(raw) == expected


@pytest.mark.parametrize(
    ("policy", "replicas", "expected"),
    [
        ({"totalPartitions": 2, "partitionSize": 4, "minPartitions": 1}, 8, 4),
        ({"totalPartitions": 2, "partitionSize": 4, "minPartitions": 0}, 8, 8),
        ({"totalPartitions": 2, "partitionSize": 4}, 8, 8),
    ],
)
def test_min_available_default(policy: Raw, replicas: int, expected: int) -> None:
    defaulted = default_job(job(task(replicas, partitionPolicy=policy)), "volcano")
    assert defaulted["spec"]["tasks"][0]["minAvailable"] == expected
    assert defaulted["spec"]["minAvailable"] == expected


def test_explicit_task_min_available_is_kept() -> None:
    raw = job(task(8, minAvailable=8, partitionPolicy={"partitionSize": 4, "minPartitions": 1}))
    assert default_job(raw, "volcano")["spec"]["tasks"][0]["minAvailable"] == 8


def update_errors(new: Raw, old: Raw) -> list[str]:
    return [str(e) for e in validate_update(new, old, SETTINGS)]


def test_partitioned_task_cannot_be_scaled_and_policy_is_immutable() -> None:
    old = default_job(partitioned(minPartitions=1), "volcano")
    scaled = copy.deepcopy(old)
    scaled["spec"]["tasks"][0]["replicas"] = 12
    assert update_errors(scaled, old) == [
        f"{T}.replicas: Invalid value: 12: must equal partitionPolicy.totalPartitions * "
        "partitionSize (8)"
    ]
    repartitioned = copy.deepcopy(old)
    repartitioned["spec"]["tasks"][0]["partitionPolicy"]["totalPartitions"] = 4
    repartitioned["spec"]["tasks"][0]["partitionPolicy"]["partitionSize"] = 2
    found = update_errors(repartitioned, old)
    assert f"{T}.partitionPolicy.totalPartitions: Invalid value: 4: {IMMUTABLE}" in found


def test_job_network_topology_is_immutable_and_checked_on_update() -> None:
    old = default_job(job(networkTopology={"mode": "hard", "highestTierAllowed": 1}), "volcano")
    new = copy.deepcopy(old)
    new["spec"]["networkTopology"]["highestTierName"] = "rack"
    assert update_errors(new, old) == [
        f'spec.networkTopology.highestTierName: Invalid value: "rack": {IMMUTABLE}',
        f"spec.networkTopology.highestTierName: Forbidden: {BOTH_TIERS}",
    ]


def test_ray_needs_its_head_task() -> None:
    assert create_errors(job(plugins={"ray": []})) == [
        'spec.plugins[ray]: Invalid value: []: the ray head task "head" does not exist in '
        "spec.tasks (set it with --head=<task>)"
    ]


def test_ray_gets_svc_by_default() -> None:
    raw = job(task(1, name="head"), plugins={"ray": []})
    assert default_job(raw, "volcano")["spec"]["plugins"] == {"ray": [], "svc": []}
