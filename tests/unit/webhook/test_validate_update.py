"""Validation on UPDATE (admission.md "Validation on UPDATE", elastic.md bounds)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from webhook.job.defaulting import default_job
from webhook.job.rules.wording import IMMUTABLE as IMMUTABLE_DETAIL
from webhook.job.update import validate_update
from webhook.settings import Settings

SETTINGS = Settings()
Raw = dict[str, Any]


def task(name: str, replicas: int, **fields: Any) -> Raw:
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox:1",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    }
                ]
            }
        },
        **fields,
    }


def stored(phase: str = "Running", **spec: Any) -> Raw:
    """A job as the API server stores it: defaulted on CREATE, with a status."""
    raw: Raw = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "job", "namespace": "ns", "resourceVersion": "7"},
        "spec": {
            "tasks": [task("master", 1), task("worker", 4, minReplicas=2, maxReplicas=8)],
            "volumes": [{"mountPath": "/data", "volumeClaim": {"resources": {}}}],
            **spec,
        },
    }
    out = default_job(raw, "volcano")
    out["status"] = {"state": {"phase": phase}}
    return out


OLD = stored()


def changed(fn: Callable[[Raw], None], old: Raw = OLD) -> Raw:
    new = copy.deepcopy(old)
    fn(new)
    return new


def errors(new: Raw, old: Raw = OLD) -> list[str]:
    return [str(e) for e in validate_update(new, old, SETTINGS)]


def spec(raw: Raw) -> Raw:
    result: Raw = raw["spec"]
    return result


def worker(raw: Raw) -> Raw:
    result: Raw = raw["spec"]["tasks"][1]
    return result


def container(raw: Raw) -> Raw:
    result: Raw = worker(raw)["template"]["spec"]["containers"][0]
    return result


MUTABLE = [
    pytest.param(lambda j: worker(j).update(replicas=6), id="task-replicas"),
    pytest.param(lambda j: worker(j).update(minAvailable=1), id="task-minAvailable"),
    pytest.param(lambda j: worker(j).update(minReplicas=2, maxReplicas=10), id="elastic-bounds"),
    pytest.param(lambda j: spec(j).update(minAvailable=2), id="job-minAvailable"),
    pytest.param(lambda j: spec(j).update(priorityClassName="high"), id="priorityClassName"),
    pytest.param(
        lambda j: spec(j)["volumes"][0].update(volumeClaimName="job-pvc-x1"),
        id="generated-pvc-name-written-back",
    ),
    pytest.param(lambda j: j["metadata"].update(labels={"a": "b"}), id="metadata-not-compared"),
    pytest.param(
        lambda j: j.update(status={"state": {"phase": "Failed"}}), id="status-not-compared"
    ),
    pytest.param(
        lambda j: container(j)["resources"]["requests"].update(cpu="1000m"),
        id="quantities-compare-by-value",
    ),
    pytest.param(lambda j: spec(j).update(policies=[]), id="absent-equals-empty"),
    pytest.param(lambda j: spec(j).pop("queue"), id="dropped-default-equals-default"),
]


@pytest.mark.parametrize("edit", MUTABLE)
def test_mutable_fields_may_change(edit: Callable[[Raw], None]) -> None:
    assert errors(changed(edit)) == []


IMMUTABLE = [
    pytest.param(
        lambda j: spec(j).update(queue="other"),
        [
            'spec.queue: Invalid value: "other": field is immutable: job updates may not change '
            "fields other than minAvailable, priorityClassName, and the tasks' replicas, "
            "minAvailable, minReplicas and maxReplicas"
        ],
        id="queue",
    ),
    pytest.param(
        lambda j: spec(j).update(schedulerName="kube-batch"),
        [
            'spec.schedulerName: Invalid value: "kube-batch": field is immutable: job updates may '
            "not change fields other than minAvailable, priorityClassName, and the tasks' "
            "replicas, minAvailable, minReplicas and maxReplicas"
        ],
        id="schedulerName",
    ),
    pytest.param(
        lambda j: spec(j).update(maxRetry=0),
        [f"spec.maxRetry: Invalid value: 0: {IMMUTABLE_DETAIL}"],
        id="maxRetry",
    ),
    pytest.param(
        lambda j: worker(j).update(name="workers"),
        [
            'spec.tasks[1].name: Invalid value: "workers": field is immutable: job updates may '
            "not change fields other than minAvailable, priorityClassName, and the tasks' "
            "replicas, minAvailable, minReplicas and maxReplicas"
        ],
        id="task-name",
    ),
    pytest.param(
        lambda j: container(j).update(image="busybox:2"),
        [
            'spec.tasks[1].template.spec.containers[0].image: Invalid value: "busybox:2": field '
            "is immutable: job updates may not change fields other than minAvailable, "
            "priorityClassName, and the tasks' replicas, minAvailable, minReplicas and "
            "maxReplicas"
        ],
        id="template",
    ),
    pytest.param(
        lambda j: container(j)["resources"]["requests"].update(cpu="2"),
        [
            "spec.tasks[1].template.spec.containers[0].resources.requests[cpu]: Invalid value: "
            '"2": field is immutable: job updates may not change fields other than minAvailable, '
            "priorityClassName, and the tasks' replicas, minAvailable, minReplicas and "
            "maxReplicas"
        ],
        id="quantity-changed-by-value",
    ),
    pytest.param(
        lambda j: spec(j).update(plugins={"svc": []}),
        [
            'spec.plugins: Invalid value: "<object>": field is immutable: job updates may not '
            "change fields other than minAvailable, priorityClassName, and the tasks' replicas, "
            "minAvailable, minReplicas and maxReplicas"
        ],
        id="plugins",
    ),
    pytest.param(
        lambda j: spec(j).update(policies=[{"event": "PodEvicted", "action": "RestartJob"}]),
        [
            'spec.policies: Invalid value: "<list>": field is immutable: job updates may not '
            "change fields other than minAvailable, priorityClassName, and the tasks' replicas, "
            "minAvailable, minReplicas and maxReplicas"
        ],
        id="policies",
    ),
    pytest.param(
        lambda j: spec(j).update(successPolicy={"rules": [{"succeededCount": 1}]}),
        [
            'spec.successPolicy: Invalid value: "<object>": field is immutable: job updates may '
            "not change fields other than minAvailable, priorityClassName, and the tasks' "
            "replicas, minAvailable, minReplicas and maxReplicas"
        ],
        id="successPolicy",
    ),
    pytest.param(
        lambda j: spec(j)["volumes"][0].update(mountPath="/other"),
        [
            'spec.volumes[0].mountPath: Invalid value: "/other": field is immutable: job updates '
            "may not change fields other than minAvailable, priorityClassName, and the tasks' "
            "replicas, minAvailable, minReplicas and maxReplicas"
        ],
        id="volume-mountPath",
    ),
    pytest.param(
        lambda j: spec(j)["tasks"].append(task("extra", 1)),
        [
            "spec.tasks: Forbidden: job updates may not add or remove tasks (the job has 2, the "
            "update has 3)"
        ],
        id="task-added",
    ),
    pytest.param(
        lambda j: spec(j)["tasks"].pop(0),
        [
            "spec.tasks: Forbidden: job updates may not add or remove tasks (the job has 2, the "
            "update has 1)",
            "spec.minAvailable: Invalid value: 3: must be less than or equal to 2, the sum over "
            "tasks of minReplicas (elastic tasks) or replicas (other tasks)",
        ],
        id="task-removed",
    ),
    pytest.param(
        lambda j: spec(j)["tasks"].reverse(),
        [
            'spec.tasks[0].name: Invalid value: "worker": field is immutable: job updates may not '
            "change fields other than minAvailable, priorityClassName, and the tasks' replicas, "
            "minAvailable, minReplicas and maxReplicas",
            'spec.tasks[1].name: Invalid value: "master": field is immutable: job updates may not '
            "change fields other than minAvailable, priorityClassName, and the tasks' replicas, "
            "minAvailable, minReplicas and maxReplicas",
        ],
        id="task-order",
    ),
]


@pytest.mark.parametrize(("edit", "expected"), IMMUTABLE)
def test_immutable_fields_name_each_change(
    edit: Callable[[Raw], None], expected: list[str]
) -> None:
    assert errors(changed(edit)) == expected


def test_a_written_back_claim_name_must_be_a_name() -> None:
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    old = stored(volumes=[{"mountPath": "/d", "volumeClaim": claim}])
    good = changed(lambda j: spec(j)["volumes"][0].update(volumeClaimName="job-pvc-abc12"), old)
    assert errors(good, old) == []
    bad = changed(lambda j: spec(j)["volumes"][0].update(volumeClaimName="Bad_Name"), old)
    assert [e.split(":")[0] for e in errors(bad, old)] == ["spec.volumes[0].volumeClaimName"]


def test_claim_name_of_an_existing_pvc_volume_is_immutable() -> None:
    old = stored(volumes=[{"mountPath": "/d", "volumeClaimName": "data"}])
    new = changed(lambda j: spec(j)["volumes"][0].update(volumeClaimName="other"), old)
    assert errors(new, old) == [
        f'spec.volumes[0].volumeClaimName: Invalid value: "other": {IMMUTABLE_DETAIL}'
    ]


BOUNDS = [
    pytest.param(
        lambda j: worker(j).update(replicas=-1),
        ["spec.tasks[1].replicas: Invalid value: -1: should be greater than or equal to 0"],
        id="replicas-non-negative",
    ),
    pytest.param(
        lambda j: worker(j).update(replicas=3, minAvailable=4, minReplicas=None, maxReplicas=None),
        [
            "spec.tasks[1].minAvailable: Invalid value: 4: 'minAvailable' is greater than "
            "'replicas' in task worker: must be less than or equal to replicas (3)"
        ],
        id="task-minAvailable-at-most-replicas",
    ),
    pytest.param(
        lambda j: spec(j).update(minAvailable=6),
        [
            "spec.minAvailable: Invalid value: 6: job 'minAvailable' should not be greater than "
            "total replicas (5, the sum of the tasks' replicas)"
        ],
        id="job-minAvailable-at-most-total",
    ),
    pytest.param(
        lambda j: spec(j).update(minAvailable=-1),
        ["spec.minAvailable: Invalid value: -1: should be greater than or equal to 0"],
        id="job-minAvailable-non-negative",
    ),
    pytest.param(
        lambda j: spec(j).update(priorityClassName="Not_A_Name"),
        [
            'spec.priorityClassName: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain '
            "must consist of lower case alphanumeric characters, '-' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ],
        id="priorityClassName-still-a-name",
    ),
    pytest.param(
        lambda j: spec(j).update(minAvailable=0),
        [],
        id="job-minAvailable-zero-on-update-scales-to-zero",
    ),
    pytest.param(
        lambda j: spec(j).pop("minAvailable"),
        [],
        id="job-minAvailable-may-be-removed-scale-to-zero",
    ),
    pytest.param(
        lambda j: worker(j).update(replicas=9),
        [
            "spec.tasks[1].replicas: Invalid value: 9: must be between minReplicas (2) and "
            "maxReplicas (8), inclusive"
        ],
        id="elastic-replicas-within-bounds",
    ),
    pytest.param(
        lambda j: worker(j).update(maxReplicas=None),
        [
            "spec.tasks[1].maxReplicas: Required value: minReplicas and maxReplicas must be set "
            "together"
        ],
        id="elastic-both-or-neither",
    ),
    pytest.param(
        lambda j: spec(j).update(minAvailable=4),
        [
            "spec.minAvailable: Invalid value: 4: must be less than or equal to 3, the sum over "
            "tasks of minReplicas (elastic tasks) or replicas (other tasks)"
        ],
        id="elastic-job-minAvailable-floor",
    ),
]


@pytest.mark.parametrize(("edit", "expected"), BOUNDS)
def test_bounds_hold_on_the_new_object(edit: Callable[[Raw], None], expected: list[str]) -> None:
    assert errors(changed(edit)) == expected


def test_success_policy_indexes_stay_within_new_replicas() -> None:
    old = stored(successPolicy={"rules": [{"taskName": "worker", "succeededIndexes": "3"}]})
    new = changed(lambda j: worker(j).update(replicas=3, minReplicas=None, maxReplicas=None), old)
    new = changed(lambda j: worker(j).update(minAvailable=2), new)
    problems = errors(new, old)
    assert (
        'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "3": must be less than 3 '
        "(the replicas of task worker)"
    ) in problems


def test_min_success_stays_within_new_replicas() -> None:
    old = stored(minSuccess=5)
    new = changed(lambda j: worker(j).update(replicas=2, minAvailable=2))
    new["spec"]["minSuccess"] = 5
    assert errors(new, old) == [
        "spec.minSuccess: Invalid value: 5: job 'minSuccess' should not be greater than total "
        "replicas (3, the sum of the tasks' replicas)"
    ]


@pytest.mark.parametrize("phase", ["Completed", "Failed", "Terminated"])
def test_finished_jobs_cannot_be_scaled(phase: str) -> None:
    old = stored(phase)
    new = changed(lambda j: worker(j).update(replicas=5), old)
    assert errors(new, old) == [
        f"spec.tasks[1].replicas: Forbidden: a {phase} job cannot be scaled"
    ]


@pytest.mark.parametrize("phase", ["Pending", "Running", "Restarting"])
def test_unfinished_jobs_can_be_scaled(phase: str) -> None:
    old = stored(phase)
    assert errors(changed(lambda j: worker(j).update(replicas=5), old), old) == []


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        pytest.param("x", OLD, ['Invalid value: "x": must be a Job object'], id="new-not-object"),
        pytest.param(
            OLD, "x", ['oldObject: Invalid value: "x": must be a Job object'], id="old-not-object"
        ),
        pytest.param(
            changed(lambda j: worker(j).update(replicas="5")),
            OLD,
            ['spec.tasks[1].replicas: Invalid value: "5": must be an integer'],
            id="garbage-replicas",
        ),
    ],
)
def test_garbage_updates_are_errors_not_exceptions(new: Any, old: Any, expected: list[str]) -> None:
    assert [str(e) for e in validate_update(new, old, SETTINGS)] == expected


def test_a_bound_the_stored_job_already_broke_does_not_block_other_updates() -> None:
    old = stored(minAvailable=9)  # admitted without the webhook
    new = changed(lambda j: spec(j)["volumes"][0].update(volumeClaimName="job-pvc-x1"), old)
    assert errors(new, old) == []
    worse = changed(lambda j: spec(j).update(minAvailable=10), old)
    assert errors(worse, old) == [
        "spec.minAvailable: Invalid value: 10: job 'minAvailable' should not be greater than "
        "total replicas (5, the sum of the tasks' replicas)"
    ]
