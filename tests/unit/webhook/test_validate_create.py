"""Validation on CREATE (admission.md "Validation on CREATE", api.md success policy, elastic.md).

Each case names the rule it checks and the exact error text; `volcano-bug-N` marks a case where
Volcano's webhook (reference §6, bug N) answers differently.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from shared.models import Queue
from webhook.job.create import validate_create
from webhook.settings import Settings

SETTINGS = Settings()
Raw = dict[str, Any]


def container(name: str = "c", **fields: Any) -> Raw:
    return {"name": name, "image": "busybox", **fields}


def task(name: str | None = "worker", replicas: int = 2, **fields: Any) -> Raw:
    out: Raw = {"replicas": replicas, "template": {"spec": {"containers": [container()]}}}
    if name is not None:
        out["name"] = name
    out.update(fields)
    return out


def job(*tasks: Raw, name: str = "job", **spec: Any) -> Raw:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "tasks": list(tasks) if tasks else [task("master", 1), task("worker", 2)],
            **spec,
        },
    }


def with_pod(pod_spec: Raw, **task_fields: Any) -> Raw:
    """A one-task job whose pod spec is `pod_spec`."""
    return job(task("worker", 2, template={"spec": pod_spec}, **task_fields))


def with_container(**fields: Any) -> Raw:
    return with_pod({"containers": [container(**fields)]})


class Queues:
    def __init__(self, *queues: Raw) -> None:
        self.queues = {q["metadata"]["name"]: Queue.from_wire(q) for q in queues}

    def get(self, name: str) -> Queue | None:
        return self.queues.get(name)

    def children(self, name: str) -> list[str]:
        return sorted(n for n, q in self.queues.items() if q.spec.parent == name)


def queue(name: str, state: str | None = "Open", parent: str | None = None) -> Raw:
    out: Raw = {"metadata": {"name": name}, "spec": {}}
    if state is not None:
        out["status"] = {"state": state}
    if parent:
        out["spec"]["parent"] = parent
    return out


QUEUES = Queues(
    queue("default"),
    queue("closed", "Closed"),
    queue("fresh", None),
    queue("root"),
    queue("parent"),
    queue("child", parent="parent"),
)


def errors(raw: Any, queues: Queues | None = QUEUES) -> list[str]:
    return [str(e) for e in validate_create(raw, queues, SETTINGS)]


def edit(fn: Callable[[Raw], None], base: Raw | None = None) -> Raw:
    raw = copy.deepcopy(base or job())
    fn(raw)
    return raw


LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
EVENTS = (
    '"*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", '
    '"JobUpdated"'
)
ACTIONS = (
    '"AbortJob", "RestartJob", "RestartTask", "RestartPod", "TerminateJob", "CompleteJob", '
    '"ResumeJob", "RestartPartition"'
)
PLUGINS = '"env", "svc", "ssh", "tensorflow", "pytorch", "mpi", "ray", "hcclrank"'


def test_a_valid_job_passes() -> None:
    assert errors(job()) == []


def test_each_problem_of_a_name_is_its_own_error() -> None:
    """As Kubernetes reports them: the joined message stays unambiguous."""
    name = "X" * 64
    found = errors(with_container(name=name))
    assert [e.split(": Invalid value:")[0] for e in found] == [f"{C0}.name", f"{C0}.name"]
    assert "must be no more than 63 characters" in found[0]
    assert "a lowercase RFC 1123 label must consist of" in found[1]


def test_port_names_are_unique_per_container_not_per_pod() -> None:
    web = [{"containerPort": 80, "name": "web"}]
    sidecar = container("sidecar", ports=[{"containerPort": 8080, "name": "web"}])
    assert errors(with_pod({"containers": [container(ports=web), sidecar]})) == []


def test_a_job_that_skipped_the_mutating_webhook_is_judged_on_its_defaults() -> None:
    raw = job(task(None, 1), task(None, 1))  # no names, no minAvailable, no queue
    assert errors(raw) == []


JOB_CASES = [
    pytest.param(
        job(name="Bad_Name"),
        [f'metadata.name: Invalid value: "Bad_Name": {LABEL}'],
        id="job-name-dns-label-volcano-bug-7",
    ),
    pytest.param(
        job(name="j" * 64),
        [f'metadata.name: Invalid value: "{"j" * 64}": must be no more than 63 characters'],
        id="job-name-at-most-63",
    ),
    pytest.param(
        edit(lambda j: j["metadata"].pop("name")),
        ["metadata.name: Required value: name or generateName is required"],
        id="job-name-required",
    ),
    pytest.param(
        edit(lambda j: j["metadata"].update(name=None, generateName="ok-")),
        [],
        id="generate-name-accepted",
    ),
    pytest.param(
        job(tasks=[]),
        [
            "spec.tasks: Required value: No task specified in job spec: at least one task is "
            "required"
        ],
        id="at-least-one-task",
    ),
    pytest.param(
        job(task("Worker")),
        [f'spec.tasks[0].name: Invalid value: "Worker": {LABEL}'],
        id="task-name-dns-label",
    ),
    pytest.param(
        job(task("a", 1), task("a", 1), task("b", 1, minAvailable=2)),
        [
            'spec.tasks[1].name: Duplicate value: "a": duplicated task name',
            "spec.tasks[2].minAvailable: Invalid value: 2: 'minAvailable' is greater than "
            "'replicas' in task b: must be less than or equal to replicas (1)",
        ],
        id="duplicate-task-names-and-later-tasks-still-checked-volcano-bug-1",
    ),
    pytest.param(
        job(task("t" * 30, 10), name="j" * 31),
        [
            f'spec.tasks[0].name: Invalid value: "{"t" * 30}": the pod name '
            f'"{"j" * 31}-{"t" * 30}-9" (job name, task name and highest index) must be a '
            "DNS-1123 label: must be no more than 63 characters"
        ],
        id="longest-pod-name-is-a-dns-label",
    ),
    pytest.param(
        job(minAvailable=4),
        [
            "spec.minAvailable: Invalid value: 4: job 'minAvailable' should not be greater than "
            "total replicas (3, the sum of the tasks' replicas)"
        ],
        id="minAvailable-at-most-total-replicas",
    ),
    pytest.param(
        job(task("w", 0), minAvailable=0),
        ["spec.minAvailable: Invalid value: 0: should be greater than or equal to 1"],
        id="minAvailable-at-least-1",
    ),
    pytest.param(
        job(minAvailable=-1),
        ["spec.minAvailable: Invalid value: -1: should be greater than or equal to 0"],
        id="negative-minAvailable-volcano-bug-12",
    ),
    pytest.param(
        job(minSuccess=4),
        [
            "spec.minSuccess: Invalid value: 4: job 'minSuccess' should not be greater than total "
            "replicas (3, the sum of the tasks' replicas)"
        ],
        id="minSuccess-at-most-total-replicas",
    ),
    pytest.param(
        job(minSuccess=0),
        ["spec.minSuccess: Invalid value: 0: should be greater than or equal to 1"],
        id="minSuccess-at-least-1",
    ),
    pytest.param(
        job(maxRetry=-1),
        ["spec.maxRetry: Invalid value: -1: should be greater than or equal to 0"],
        id="maxRetry-non-negative",
    ),
    pytest.param(
        job(ttlSecondsAfterFinished=-5),
        ["spec.ttlSecondsAfterFinished: Invalid value: -5: should be greater than or equal to 0"],
        id="ttl-non-negative",
    ),
]

TASK_CASES = [
    pytest.param(
        job(task("w", -1)),
        ["spec.tasks[0].replicas: Invalid value: -1: should be greater than or equal to 0"],
        id="replicas-non-negative-volcano-bug-12",
    ),
    pytest.param(
        job(task("w", 2, minAvailable=3)),
        [
            "spec.tasks[0].minAvailable: Invalid value: 3: 'minAvailable' is greater than "
            "'replicas' in task w: must be less than or equal to replicas (2)"
        ],
        id="task-minAvailable-at-most-replicas",
    ),
    pytest.param(
        job(task("w", 2, minAvailable=-1)),
        ["spec.tasks[0].minAvailable: Invalid value: -1: should be greater than or equal to 0"],
        id="task-minAvailable-non-negative",
    ),
    pytest.param(
        job(task("w", 2, maxRetry=-1)),
        ["spec.tasks[0].maxRetry: Invalid value: -1: should be greater than or equal to 0"],
        id="task-maxRetry-non-negative",
    ),
    pytest.param(
        job(task("a", 1, dependsOn={"name": ["zz"]}), task("b", 1)),
        ['spec.tasks[0].dependsOn.name[0]: Not found: "zz": no task of this name in spec.tasks'],
        id="dependsOn-unknown-task",
    ),
    pytest.param(
        job(task("a", 1, dependsOn={"name": ["a"]}), task("b", 1)),
        ['spec.tasks[0].dependsOn.name[0]: Invalid value: "a": a task cannot depend on itself'],
        id="dependsOn-self",
    ),
    pytest.param(
        job(
            task("a", 1, dependsOn={"name": ["b"]}),
            task("b", 1, dependsOn={"name": ["c"]}),
            task("c", 1, dependsOn={"name": ["a"]}),
        ),
        [
            'spec.tasks[0].dependsOn.name: Invalid value: ["b"]: dependencies form a cycle: '
            "a -> b -> c -> a"
        ],
        id="dependsOn-cycle",
    ),
    pytest.param(
        job(task("a", 1, dependsOn={"name": ["b", "b"]}), task("b", 1)),
        ['spec.tasks[0].dependsOn.name[1]: Duplicate value: "b"'],
        id="dependsOn-repeated-name-is-not-a-cycle-volcano-bug-3",
    ),
    pytest.param(
        job(task("a", 1, dependsOn={"name": ["b"], "iteration": "some"}), task("b", 1)),
        [
            'spec.tasks[0].dependsOn.iteration: Unsupported value: "some": supported values: '
            '"any", "all"'
        ],
        id="dependsOn-iteration",
    ),
    pytest.param(
        job(task("a", 1, dependsOn={"name": ["b"], "iteration": "all"}), task("b", 1)),
        [],
        id="dependsOn-valid",
    ),
    pytest.param(
        job(task("w", 1, topologyPolicy="numa")),
        [
            'spec.tasks[0].topologyPolicy: Unsupported value: "numa": supported values: "none", '
            '"best-effort", "restricted", "single-numa-node"'
        ],
        id="topologyPolicy-enum",
    ),
    pytest.param(
        with_pod(
            {"containers": [container(resources={"requests": {"cpu": "500m"}})]},
            topologyPolicy="single-numa-node",
        ),
        [
            "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "
            '"500m": must be a whole, non-zero number of CPUs when topologyPolicy is '
            '"single-numa-node"'
        ],
        id="topologyPolicy-needs-whole-cpus",
    ),
    pytest.param(
        with_pod({"containers": [container()]}, topologyPolicy="restricted"),
        [
            "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]: Required value: "
            'must be a whole, non-zero number of CPUs when topologyPolicy is "restricted"'
        ],
        id="topologyPolicy-needs-a-cpu-request",
    ),
    pytest.param(
        with_pod(
            {
                "containers": [
                    container(resources={"requests": {"memory": "1Gi"}, "limits": {"cpu": "2"}})
                ]
            },
            topologyPolicy="single-numa-node",
        ),
        [],
        id="topologyPolicy-cpu-limit-counts-when-requests-lack-cpu-volcano-bug-10",
    ),
    pytest.param(
        with_pod({"containers": [container()]}, topologyPolicy="none"),
        [],
        id="topologyPolicy-none-needs-nothing",
    ),
]

ELASTIC_CASES = [
    pytest.param(
        job(task("w", 4, minReplicas=2, maxReplicas=8)),
        [],
        id="elastic-valid-with-defaults",
    ),
    pytest.param(
        job(task("w", 4, minReplicas=2)),
        [
            "spec.tasks[0].maxReplicas: Required value: minReplicas and maxReplicas must be set "
            "together"
        ],
        id="elastic-both-or-neither",
    ),
    pytest.param(
        job(task("w", 4, minReplicas=0, maxReplicas=8)),
        ["spec.tasks[0].minReplicas: Invalid value: 0: should be greater than or equal to 1"],
        id="elastic-minReplicas-at-least-1",
    ),
    pytest.param(
        job(task("w", 4, minReplicas=6, maxReplicas=5)),
        [
            "spec.tasks[0].minReplicas: Invalid value: 6: must be less than or equal to "
            "maxReplicas (5)"
        ],
        id="elastic-min-at-most-max",
    ),
    pytest.param(
        job(task("w", 9, minReplicas=2, maxReplicas=8)),
        [
            "spec.tasks[0].replicas: Invalid value: 9: must be between minReplicas (2) and "
            "maxReplicas (8), inclusive"
        ],
        id="elastic-replicas-within-bounds",
    ),
    pytest.param(
        job(task("w", 4, minReplicas=2, maxReplicas=8, minAvailable=3)),
        [
            "spec.tasks[0].minAvailable: Invalid value: 3: must be less than or equal to "
            "minReplicas (2)"
        ],
        id="elastic-task-minAvailable-at-most-minReplicas",
    ),
    pytest.param(
        job(
            task("w", 4, minReplicas=2, maxReplicas=8, minAvailable=2),
            task("ps", 1),
            minAvailable=4,
        ),
        [
            "spec.minAvailable: Invalid value: 4: must be less than or equal to 3, the sum over "
            "tasks of minReplicas (elastic tasks) or replicas (other tasks)"
        ],
        id="elastic-job-minAvailable-at-most-floor",
    ),
]

PLUGIN_CASES = [
    pytest.param(
        job(plugins={"horovod": []}),
        [f'spec.plugins[horovod]: Unsupported value: "horovod": supported values: {PLUGINS}'],
        id="plugin-supported",
    ),
    pytest.param(
        job(task("worker", 2), plugins={"mpi": []}),
        [
            'spec.plugins[mpi]: Invalid value: []: the mpi master task "master" does not exist in '
            "spec.tasks (set it with --master=<task>)"
        ],
        id="mpi-needs-master-task",
    ),
    pytest.param(
        job(task("boss", 1), task("w", 2), plugins={"mpi": ["--master=boss", "--worker=w"]}),
        [],
        id="mpi-master-flag",
    ),
    pytest.param(
        job(task("boss", 1), task("w", 2), plugins={"mpi": ["-master", "boss", "--port", "2222"]}),
        [],
        id="mpi-go-flag-forms",
    ),
    pytest.param(
        job(plugins={"mpi": ["--hosts=x", "--master=master"]}),
        [],
        id="mpi-unknown-flag-is-only-a-warning",
    ),
    pytest.param(
        job(plugins={"mpi": ["--port=abc"]}),
        [],
        id="mpi-port-integer",
    ),
    pytest.param(
        job(plugins={"svc": ["--publish-not-ready-addresses", "--disable-network-policy=true"]}),
        [],
        id="svc-flags",
    ),
    pytest.param(
        job(plugins={"svc": ["--disable-network-policy=maybe"]}),
        [],
        id="svc-boolean-flag",
    ),
    pytest.param(
        job(plugins={"ssh": ["--ssh-key-file-path=/home/u/.ssh", "--ssh-private-key", "k"]}),
        [],
        id="ssh-flags",
    ),
    pytest.param(
        job(plugins={"env": ["extra"]}),
        [],
        id="env-takes-no-arguments",
    ),
    pytest.param(
        job(plugins={"tensorflow": ["--ps=ps", "--worker=worker", "--port=2222"]}),
        [],
        id="tensorflow-flags",
    ),
    pytest.param(
        job(plugins={"pytorch": ["--master=master", "--port=70000"]}),
        [
            'spec.plugins[pytorch]: Invalid value: ["--master=master","--port=70000"]: --port must '
            "be between 1 and 65535"
        ],
        id="pytorch-port-range",
    ),
]

VOLUME_CASES = [
    pytest.param(
        job(volumes=[{"mountPath": "/data", "volumeClaimName": "data"}]), [], id="volume-valid"
    ),
    pytest.param(
        job(volumes=[{"volumeClaimName": "data"}]),
        ["spec.volumes[0].mountPath: Required value"],
        id="volume-mountPath-required",
    ),
    pytest.param(
        job(volumes=[{"mountPath": "", "volumeClaimName": "data"}]),
        ["spec.volumes[0].mountPath: Required value: mountPath is required"],
        id="volume-mountPath-not-empty",
    ),
    pytest.param(
        job(volumes=[{"mountPath": "/a:b", "volumeClaimName": "data"}]),
        ["spec.volumes[0].mountPath: Invalid value: \"/a:b\": must not contain ':'"],
        id="volume-mountPath-no-colon",
    ),
    pytest.param(
        job(
            volumes=[
                {"mountPath": "/d", "volumeClaimName": "a"},
                {"mountPath": "/d", "volumeClaimName": "b"},
            ]
        ),
        ['spec.volumes[1].mountPath: Duplicate value: "/d": duplicated mountPath: /d'],
        id="volume-mountPath-unique",
    ),
    pytest.param(
        job(volumes=[{"mountPath": "/d"}]),
        [
            "spec.volumes[0].volumeClaimName: Required value: either VolumeClaim or "
            "VolumeClaimName must be specified"
        ],
        id="volume-needs-a-claim",
    ),
    pytest.param(
        job(volumes=[{"mountPath": "/d", "volumeClaimName": "a", "volumeClaim": {}}]),
        [
            "spec.volumes[0].volumeClaimName: Forbidden: must not be set together with "
            "volumeClaim: set only volumeClaimName to use an existing PVC, or only volumeClaim to "
            "create a new one"
        ],
        id="volume-not-both",
    ),
    pytest.param(
        job(volumes=[{"mountPath": "/d", "volumeClaimName": "Bad_Claim"}]),
        [
            'spec.volumes[0].volumeClaimName: Invalid value: "Bad_Claim": a lowercase RFC 1123 '
            "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ],
        id="volume-claim-name-dns-subdomain",
    ),
    pytest.param(
        job(
            volumes=[
                {
                    "mountPath": "/d",
                    "volumeClaim": {
                        "accessModes": "ReadWriteOnce",
                        "resources": {"requests": {"storage": "lots"}},
                    },
                }
            ]
        ),
        [
            'spec.volumes[0].volumeClaim.accessModes: Invalid value: "ReadWriteOnce": must be of '
            "type array, not string",
            'spec.volumes[0].volumeClaim.resources.requests[storage]: Invalid value: "lots": must '
            "be a quantity such as 500m, 2 or 1Gi",
        ],
        id="volume-claim-fits-the-pvc-spec-schema",
    ),
]

QUEUE_CASES = [
    pytest.param(
        job(queue="nope"),
        ['spec.queue: Not found: "nope": no Queue of this name exists'],
        id="queue-exists",
    ),
    pytest.param(
        job(queue="closed"),
        [
            'spec.queue: Invalid value: "closed": the queue is Closed; jobs can only be submitted '
            "to an Open queue"
        ],
        id="queue-open",
    ),
    pytest.param(job(queue="fresh"), [], id="queue-without-state-is-open-volcano-bug-11"),
    pytest.param(
        job(queue="root"),
        ['spec.queue: Invalid value: "root": jobs cannot be submitted to the root queue'],
        id="queue-not-root",
    ),
    pytest.param(
        job(queue="parent"),
        [
            'spec.queue: Invalid value: "parent": the queue has child queues (child); jobs can '
            "only be submitted to a leaf queue"
        ],
        id="queue-leaf",
    ),
    pytest.param(job(queue="child"), [], id="queue-child-is-a-leaf"),
]

SUCCESS_RULES = "spec.successPolicy.rules"
SUCCESS_CASES = [
    pytest.param(
        job(successPolicy={"rules": [{"taskName": "master", "succeededIndexes": "0"}]}),
        [],
        id="success-leader",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"succeededCount": 3}]}),
        [],
        id="success-count-of-whole-job",
    ),
    pytest.param(
        job(successPolicy={}),
        [
            f"{SUCCESS_RULES}: Required value: at least one rule must be specified when the "
            "successPolicy is specified"
        ],
        id="success-no-rules",
    ),
    pytest.param(
        job(successPolicy={"rules": []}),
        [
            f"{SUCCESS_RULES}: Required value: at least one rule must be specified when the "
            "successPolicy is specified"
        ],
        id="success-empty-rules",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"succeededCount": 1}] * 21}),
        [f"{SUCCESS_RULES}: Too many: 21: must have at most 20 items"],
        id="success-at-most-20-rules",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"taskName": "master"}]}),
        [
            f"{SUCCESS_RULES}[0]: Required value: at least one of succeededCount or "
            "succeededIndexes must be specified"
        ],
        id="success-rule-needs-indexes-or-count",
    ),
    pytest.param(
        job(
            successPolicy={"rules": [{"taskName": "worker", "succeededIndexes": "invalid-format"}]}
        ),
        [
            f'{SUCCESS_RULES}[0].succeededIndexes: Invalid value: "invalid-format": error parsing '
            'succeededIndexes: "invalid-format" is not an index or a range "a-b" of non-negative '
            "integers"
        ],
        id="success-indexes-malformed",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"taskName": "worker", "succeededIndexes": "1,0"}]}),
        [
            f'{SUCCESS_RULES}[0].succeededIndexes: Invalid value: "1,0": error parsing '
            'succeededIndexes: "0" must be above the previous range (ascending, no overlap)'
        ],
        id="success-indexes-ascending",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"taskName": "worker", "succeededIndexes": "1" * 65537}]}),
        [f"{SUCCESS_RULES}[0].succeededIndexes: Too long: must have at most 65536 bytes"],
        id="success-indexes-at-most-64KiB",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"taskName": "worker", "succeededIndexes": "0-2"}]}),
        [
            f'{SUCCESS_RULES}[0].succeededIndexes: Invalid value: "0-2": must be less than 2 '
            "(the replicas of task worker)"
        ],
        id="success-indexes-within-replicas",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"succeededIndexes": "0"}]}),
        [
            f"{SUCCESS_RULES}[0].taskName: Required value: must name a task when succeededIndexes "
            "is set and the job has more than one task"
        ],
        id="success-indexes-need-task-name",
    ),
    pytest.param(
        job(task("w", 3), successPolicy={"rules": [{"succeededIndexes": "0-2"}]}),
        [],
        id="success-indexes-single-task-needs-no-name",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"taskName": "chief", "succeededCount": 1}]}),
        [
            f'{SUCCESS_RULES}[0].taskName: Invalid value: "chief": must be the name of a task in '
            "spec.tasks"
        ],
        id="success-unknown-task",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"succeededCount": -1}]}),
        [f"{SUCCESS_RULES}[0].succeededCount: Invalid value: -1: must be greater than 0"],
        id="success-count-positive",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"succeededCount": 4}]}),
        [
            f"{SUCCESS_RULES}[0].succeededCount: Invalid value: 4: must be less than or equal to 3 "
            "(the total replicas of the job)"
        ],
        id="success-count-within-job",
    ),
    pytest.param(
        job(successPolicy={"rules": [{"taskName": "worker", "succeededCount": 3}]}),
        [
            f"{SUCCESS_RULES}[0].succeededCount: Invalid value: 3: must be less than or equal to 2 "
            "(the replicas of task worker)"
        ],
        id="success-count-within-task",
    ),
    pytest.param(
        job(
            task("w", 5),
            successPolicy={"rules": [{"succeededIndexes": "0-2", "succeededCount": 4}]},
        ),
        [
            f"{SUCCESS_RULES}[0].succeededCount: Invalid value: 4: must be less than or equal to 3 "
            "(the number of indexes in the specified succeededIndexes field)"
        ],
        id="success-count-within-listed-indexes",
    ),
]


def _policy(**fields: Any) -> Raw:
    return job(policies=[fields])


POLICY = "spec.policies[0]"
POLICY_CASES = [
    pytest.param(_policy(event="PodEvicted", action="RestartJob"), [], id="policy-valid"),
    pytest.param(
        _policy(event="PodFailed", exitCode=3, action="AbortJob"),
        [
            "spec.policies[0].exitCode: Forbidden: must not specify event and exitCode "
            "simultaneously: set event or events, or exitCode"
        ],
        id="policy-event-xor-exitCode",
    ),
    pytest.param(
        _policy(action="AbortJob"),
        [
            "spec.policies[0]: Required value: either event and exitCode should be specified: set "
            "one of event, events or exitCode"
        ],
        id="policy-needs-event-or-exitCode",
    ),
    pytest.param(
        _policy(event="PodRunning", action="AbortJob"),
        [
            'spec.policies[0].event: Unsupported value: "PodRunning": invalid policy event; '
            'supported values: "*", "PodFailed", "PodEvicted", "PodPending", "Unknown", '
            '"TaskCompleted", "TaskFailed", "JobUpdated"'
        ],
        id="policy-event-supported",
    ),
    pytest.param(
        _policy(events=["PodFailed", "OutOfSync"], action="AbortJob"),
        [
            'spec.policies[0].events[1]: Unsupported value: "OutOfSync": invalid policy event; '
            'supported values: "*", "PodFailed", "PodEvicted", "PodPending", "Unknown", '
            '"TaskCompleted", "TaskFailed", "JobUpdated"'
        ],
        id="policy-events-supported",
    ),
    pytest.param(
        job(
            policies=[
                {"event": "*", "action": "AbortJob"},
                {"event": "PodFailed", "action": "RestartJob"},
            ]
        ),
        [
            'spec.policies[0].event: Invalid value: "*": if there\'s * here, no other policy '
            "should be here: * matches every event, so it must be the only event in the list; "
            "remove the other events or the * policy"
        ],
        id="policy-star-is-alone",
    ),
    pytest.param(
        job(
            policies=[{"event": "*", "action": "AbortJob"}],
            tasks=[task("w", 1, policies=[{"event": "PodFailed", "action": "RestartTask"}])],
        ),
        [],
        id="policy-lists-are-independent-volcano-bug-20",
    ),
    pytest.param(
        _policy(event="PodFailed"),
        [
            "spec.policies[0].action: Required value: invalid policy action: every policy needs "
            "an action"
        ],
        id="policy-action-required",
    ),
    pytest.param(
        _policy(exitCode=3),
        [
            "spec.policies[0].action: Required value: invalid policy action: every policy needs "
            "an action"
        ],
        id="policy-action-required-for-exitCode-volcano-bug-2",
    ),
    pytest.param(
        _policy(exitCode=3, action="SyncJob"),
        [
            'spec.policies[0].action: Unsupported value: "SyncJob": invalid policy action; '
            'supported values: "AbortJob", "RestartJob", "RestartTask", "RestartPod", '
            '"TerminateJob", "CompleteJob", "ResumeJob", "RestartPartition"'
        ],
        id="policy-action-supported-for-exitCode-volcano-bug-2",
    ),
    pytest.param(
        _policy(exitCode=0, action="AbortJob"),
        [
            "spec.policies[0].exitCode: Invalid value: 0: 0 is not a valid error code; use a "
            "non-zero exit code"
        ],
        id="policy-exitCode-non-zero",
    ),
    pytest.param(
        job(
            policies=[
                {"event": "PodFailed", "action": "AbortJob"},
                {"events": ["PodFailed"], "action": "RestartJob"},
            ]
        ),
        [
            'spec.policies[1].events[0]: Duplicate value: "PodFailed": duplicate event PodFailed '
            "across different policy"
        ],
        id="policy-event-once-per-list",
    ),
    pytest.param(
        job(
            policies=[
                {"exitCode": 2, "action": "AbortJob"},
                {"exitCode": 2, "action": "RestartJob"},
            ]
        ),
        ["spec.policies[1].exitCode: Duplicate value: 2: duplicate exitCode 2"],
        id="policy-exitCode-once-per-list",
    ),
    pytest.param(
        _policy(event="PodPending", action="AbortJob", timeout="5 minutes"),
        [
            f'{POLICY}.timeout: Invalid value: "5 minutes": invalid duration "5 minutes": use a '
            "number with a unit (ns, us, ms, s, m, h)"
        ],
        id="policy-timeout-duration",
    ),
    pytest.param(
        _policy(event="PodPending", action="AbortJob", timeout="-1m"),
        [f'{POLICY}.timeout: Invalid value: "-1m": must not be negative'],
        id="policy-timeout-non-negative",
    ),
    pytest.param(
        job(
            policies=[
                {"event": "Nope", "action": "AbortJob"},
                {"exitCode": 0},
            ]
        ),
        [
            'spec.policies[0].event: Unsupported value: "Nope": invalid policy event; supported '
            'values: "*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", '
            '"TaskFailed", "JobUpdated"',
            "spec.policies[1].exitCode: Invalid value: 0: 0 is not a valid error code; use a "
            "non-zero exit code",
            "spec.policies[1].action: Required value: invalid policy action: every policy needs "
            "an action",
        ],
        id="policy-every-error-of-a-list-volcano-bug-6",
    ),
    pytest.param(
        job(task("w", 1, policies=[{"event": "TaskFailed"}])),
        [
            "spec.tasks[0].policies[0].action: Required value: invalid policy action: every "
            "policy needs an action"
        ],
        id="policy-task-list-path",
    ),
]

TEMPLATE = "spec.tasks[0].template.spec"
C0 = f"{TEMPLATE}.containers[0]"
TEMPLATE_CASES = [
    pytest.param(
        with_pod({"containers": []}),
        [f"{TEMPLATE}.containers: Required value: at least one container"],
        id="pod-needs-a-container",
    ),
    pytest.param(
        with_pod({}),
        [f"{TEMPLATE}.containers: Required value"],
        id="pod-containers-required",
    ),
    pytest.param(
        job(task("w", 1, template={})),
        [
            "spec.tasks[0].template.spec: Required value: a pod template needs a spec with "
            "containers"
        ],
        id="pod-spec-required",
    ),
    pytest.param(
        with_pod({"containers": [{"name": "c"}]}),
        [f"{C0}.image: Required value"],
        id="container-image-required",
    ),
    pytest.param(
        with_pod({"containers": [{"image": "x"}]}),
        [f"{C0}.name: Required value"],
        id="container-name-required",
    ),
    pytest.param(
        with_pod({"containers": [container("Main")]}),
        [f'{C0}.name: Invalid value: "Main": {LABEL}'],
        id="container-name-dns-label",
    ),
    pytest.param(
        with_pod({"initContainers": [container("c")], "containers": [container("c")]}),
        [f'{C0}.name: Duplicate value: "c"'],
        id="container-names-unique-across-init-containers",
    ),
    pytest.param(
        with_container(ports=[{"containerPort": 0}]),
        [f"{C0}.ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive"],
        id="port-at-least-1",
    ),
    pytest.param(
        with_container(ports=[{"containerPort": 70000}]),
        [
            f"{C0}.ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, "
            "inclusive"
        ],
        id="port-at-most-65535",
    ),
    pytest.param(
        with_container(ports=[{"containerPort": 80, "protocol": "HTTP"}]),
        [
            f'{C0}.ports[0].protocol: Unsupported value: "HTTP": supported values: "TCP", "UDP", '
            '"SCTP"'
        ],
        id="port-protocol",
    ),
    pytest.param(
        with_container(
            ports=[{"containerPort": 80, "name": "web"}, {"containerPort": 81, "name": "web"}]
        ),
        [f'{C0}.ports[1].name: Duplicate value: "web"'],
        id="port-names-unique",
    ),
    pytest.param(
        with_container(ports=[{"containerPort": "80"}]),
        [f'{C0}.ports[0].containerPort: Invalid value: "80": must be of type integer, not string'],
        id="port-type-from-the-pod-schema",
    ),
    pytest.param(
        with_container(env=[{"name": "1X", "value": "v"}]),
        [
            f'{C0}.env[0].name: Invalid value: "1X": a valid environment variable name must '
            "consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a "
            "digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for "
            "validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
        ],
        id="env-name-valid",
    ),
    pytest.param(
        with_container(volumeMounts=[{"name": "data", "mountPath": "/d"}]),
        [f'{C0}.volumeMounts[0].name: Not found: "data": no volume of this name in spec.volumes'],
        id="volume-mount-names-a-volume",
    ),
    pytest.param(
        with_pod(
            {
                "containers": [container(volumeMounts=[{"name": "data", "mountPath": "/d"}])],
                "volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}],
            }
        ),
        [f'{TEMPLATE}.volumes[1].name: Duplicate value: "data"'],
        id="volume-names-unique",
    ),
    pytest.param(
        with_pod({"containers": [container()], "restartPolicy": "Sometimes"}),
        [
            f'{TEMPLATE}.restartPolicy: Unsupported value: "Sometimes": supported values: '
            '"Always", "OnFailure", "Never"'
        ],
        id="restart-policy",
    ),
    pytest.param(
        with_container(resources={"limits": {"cpu": "lots"}}),
        [
            f'{C0}.resources.limits[cpu]: Invalid value: "lots": must be a quantity such as 500m, '
            "2 or 1Gi"
        ],
        id="quantity-parses",
    ),
    pytest.param(
        with_container(resources={"requests": {"cpu": 0.5, "memory": 1.0}}),
        [
            f"{C0}.resources.requests[cpu]: Invalid value: 0.5: must be an integer or a string: "
            'write a fraction as a string, such as "0.5" or 500m'
        ],
        id="quantity-fraction-quoted-as-the-crd-needs",
    ),
    pytest.param(
        with_container(resources={"requests": {"cpu": " 1", "memory": "1K", "gpu": "1e3"}}),
        [
            f'{C0}.resources.requests[cpu]: Invalid value: " 1": must be a quantity such as 500m, '
            "2 or 1Gi",
            f'{C0}.resources.requests[memory]: Invalid value: "1K": must be a quantity such as '
            "500m, 2 or 1Gi",
        ],
        id="quantity-matches-the-crd-pattern",
    ),
    pytest.param(
        with_pod(
            {
                "containers": [
                    container(
                        env=[
                            {
                                "name": "CPUS",
                                "valueFrom": {
                                    "resourceFieldRef": {"resource": "limits.cpu", "divisor": "x"}
                                },
                            }
                        ]
                    )
                ],
                "overhead": {"cpu": "some"},
                "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "big"}}],
            }
        ),
        [
            f'{C0}.env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "x": must be a '
            "quantity such as 500m, 2 or 1Gi",
            f'{TEMPLATE}.overhead[cpu]: Invalid value: "some": must be a quantity such as 500m, '
            "2 or 1Gi",
            f'{TEMPLATE}.volumes[0].emptyDir.sizeLimit: Invalid value: "big": must be a quantity '
            "such as 500m, 2 or 1Gi",
        ],
        id="every-quantity-of-the-pod-template",
    ),
    pytest.param(
        with_container(resources={"requests": {"memory": "-1Gi"}}),
        [
            f'{C0}.resources.requests[memory]: Invalid value: "-1Gi": must be greater than or '
            "equal to 0"
        ],
        id="quantity-non-negative",
    ),
    pytest.param(
        with_container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        [
            f'{C0}.resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu '
            "limit of 1"
        ],
        id="requests-at-most-limits",
    ),
    pytest.param(
        with_container(resources={"requests": {"cpu": "1000m"}, "limits": {"cpu": 1}}),
        [],
        id="requests-equal-limits-by-value",
    ),
    pytest.param(
        with_pod({"containers": [container(futureField={"x": 1})], "someNewPodField": True}),
        [],
        id="unknown-template-fields-accepted",
    ),
    pytest.param(
        with_pod({"containers": "c"}),
        [f'{TEMPLATE}.containers: Invalid value: "c": must be of type array, not string'],
        id="template-types-from-the-pod-schema",
    ),
]

GARBAGE_CASES = [
    pytest.param(
        "a string", ['Invalid value: "a string": must be a Job object'], id="object-not-a-dict"
    ),
    pytest.param(
        {"metadata": {"name": "j"}, "spec": "x"},
        ['spec: Invalid value: "x": must be an object'],
        id="spec-not-an-object",
    ),
    pytest.param(
        job(task("a", 1), "garbage"),  # type: ignore[arg-type]
        ['spec.tasks[1]: Invalid value: "garbage": must be an object'],
        id="task-not-an-object",
    ),
    pytest.param(
        job(task("a", "2")),  # type: ignore[arg-type]
        ['spec.tasks[0].replicas: Invalid value: "2": must be an integer'],
        id="replicas-not-an-integer",
    ),
    pytest.param(
        job(task("a", True)),
        ["spec.tasks[0].replicas: Invalid value: true: must be an integer"],
        id="replicas-boolean",
    ),
    pytest.param(
        job(policies=[1]),
        ["spec.policies[0]: Invalid value: 1: must be an object"],
        id="policy-not-an-object",
    ),
    pytest.param(
        job(plugins={"mpi": "x"}, tasks=[task("master", 1)]),
        ['spec.plugins[mpi]: Invalid value: "x": must be a list'],
        id="plugin-args-not-a-list",
    ),
    pytest.param(
        job(task("a", 1, template="pod")),
        ['spec.tasks[0].template: Invalid value: "pod": must be an object'],
        id="template-not-an-object",
    ),
    pytest.param(
        job(task("a", 1, min_available=5)),
        [],
        id="snake-case-names-are-unknown-fields",
    ),
]


@pytest.mark.parametrize(
    ("raw", "expected"),
    JOB_CASES
    + TASK_CASES
    + ELASTIC_CASES
    + PLUGIN_CASES
    + VOLUME_CASES
    + QUEUE_CASES
    + SUCCESS_CASES
    + POLICY_CASES
    + TEMPLATE_CASES
    + GARBAGE_CASES,
)
def test_create_rule(raw: Any, expected: list[str]) -> None:
    assert errors(raw) == expected


def test_queue_check_is_skipped_without_a_queue_view() -> None:
    assert errors(job(queue="nope"), queues=None) == []


def test_every_problem_is_reported_in_field_order() -> None:
    raw = job(
        task("Bad", 1, minAvailable=2, policies=[{"event": "Nope", "action": "AbortJob"}]),
        task("ok", 1),
        name="Bad_Job",
        policies=[{"exitCode": 0, "action": "AbortJob"}],
        plugins={"nope": []},
        volumes=[{"mountPath": "/x"}],
        queue="closed",
        successPolicy={"rules": [{"taskName": "missing", "succeededCount": 1}]},
        minAvailable=9,
    )
    fields = [e.field for e in validate_create(raw, QUEUES, SETTINGS)]
    assert fields == [
        "metadata.name",
        "spec.tasks[0].name",
        "spec.tasks[0].minAvailable",
        "spec.tasks[0].policies[0].event",
        "spec.policies[0].exitCode",
        "spec.plugins[nope]",
        "spec.volumes[0].volumeClaimName",
        "spec.queue",
        "spec.successPolicy.rules[0].taskName",
        "spec.minAvailable",
    ]


def test_an_empty_task_name_is_defaulted_not_rejected_volcano_bug_8() -> None:
    assert errors(job(task("", 1))) == []
