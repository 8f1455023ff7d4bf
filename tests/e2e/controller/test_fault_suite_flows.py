"""The fault suite for the JobFlow controller and the PodGroup controller of plain workloads.

The local control plane runs with `--fault-rate 0.05`; the controller reaches kube-apiserver
through the fault proxy (500s, 429s, 409s, timeouts, cut watches) and is killed with SIGKILL and
restarted three times while the scenarios run:

- JobFlows of several DAG shapes (a chain, a diamond, a fan-in, a step depending on a Failed
  Job, a failure no step handles), with both `jobRetainPolicy` values;
- a Deployment of the `volcano` scheduler scaled 2 → 4 → 2, then deleted, and a batch Job run to
  completion, then deleted.

The invariants checked, beyond each flow's status and phase (docs/jobflow.md):

- every step whose dependencies are met has its Job `<flow>-<step>` created exactly once: a watch
  on Jobs that resumes across cuts sees one uid per name over the whole run. Job names are
  deterministic and a create that meets AlreadyExists is done, so neither a kill nor a fault
  explains a second uid: the only deletion is `jobRetainPolicy: delete` after the flow
  Succeeded, and Succeed is final. A step that can never run never has a Job;
- `delete` flows that Succeeded have no Jobs left, `retain` and Failed flows keep theirs;
- a JobTemplate's `jobDependsOnList` names the Jobs left that were made from it;
- each workload has exactly one PodGroup, `podgroup-<owner uid>` with the owner's
  `group-min-member`, one uid over the whole run (scaling never reaches zero, so nothing explains
  a second), every pod of the workload names it, and it is gone once the owner is deleted;
- no two live pods ever share a job/task/index (the pod watch of test_fault_suite.py).

The test prints its summary; docs/operations.md quotes it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.jobflow.shell.loop import JOBFLOWS, JOBTEMPLATES
from controller.workloads.shell import BATCH_JOBS, REPLICASETS
from kubeio.client import JOBS, PODGROUPS, PODS, Kube, Resource
from kubeio.errors import KubeError
from localcluster.running import LocalCluster, running_cluster
from shared import labels
from tests.e2e.controller.faultsuite_support import (
    AddedWatch,
    Killer,
    PodWatch,
    faults_injected,
    retrying,
)
from tests.support.polling import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = 20260202
FAULT_RATE = 0.05
KILLS_AT = (4.0, 10.0, 17.0)  # seconds after the controller first started
DEADLINE = 150.0  # for everything, on a busy two-core machine
WIDE_FLOWS = 12
FLOWS_NS = "flows"
WORKLOADS_NS = "workloads"
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
STATUS_LISTS = (
    "pendingJobs",
    "runningJobs",
    "completedJobs",
    "failedJobs",
    "terminatedJobs",
    "unKnowJobs",
)


# --- JobFlows ------------------------------------------------------------------------------------


def job_spec(*, fails: bool) -> dict[str, Any]:
    """A one-pod Job that completes after 2 s, or whose pod fails after 1 s under RestartJob
    with maxRetry 1, so that the Job ends Failed after that one run."""
    annotations = {labels.SIM_FAIL_AFTER_KEY: "1s"} if fails else {labels.SIM_RUNTIME_KEY: "2s"}
    return {
        "schedulerName": "volcano",
        "queue": "default",
        "minAvailable": 1,
        "maxRetry": 1,
        "policies": [{"event": "PodFailed", "action": "RestartJob"}] if fails else [],
        "tasks": [
            {
                "name": "main",
                "replicas": 1,
                "minAvailable": 1,
                "template": {
                    "metadata": {"annotations": annotations},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox"}],
                    },
                },
            }
        ],
    }


# The JobTemplates: a step runs the template of its name.
TEMPLATES = {name: job_spec(fails=name == "bad") for name in ("a", "b", "c", "d", "bad", "report")}


def step(name: str, *targets: str, phases: tuple[str, ...] = ()) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if targets:
        entry["dependsOn"] = {"targets": list(targets)}
        if phases:
            entry["dependsOn"]["phases"] = list(phases)
    return entry


@dataclass(frozen=True)
class FlowCase:
    name: str
    retain: str
    steps: tuple[dict[str, Any], ...]
    phase: str  # the flow's final phase
    jobs: dict[str, str]  # step -> its Job's final phase; a step not named never has a Job

    def job(self, step_name: str) -> str:
        return f"{self.name}-{step_name}"

    @property
    def keeps_jobs(self) -> bool:
        return self.retain == "retain" or self.phase == "Failed"

    def lists(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for step_name, phase in self.jobs.items():
            out.setdefault(f"{phase.lower()}Jobs", []).append(self.job(step_name))
        return {key: sorted(names) for key, names in out.items()}

    def body(self) -> dict[str, Any]:
        return {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "metadata": {"name": self.name, "namespace": FLOWS_NS},
            "spec": {"jobRetainPolicy": self.retain, "flows": list(self.steps)},
        }


FLOWS = (
    FlowCase(
        "chain",
        "delete",
        (step("a"), step("b", "a"), step("c", "b")),
        "Succeed",
        {"a": "Completed", "b": "Completed", "c": "Completed"},
    ),
    FlowCase(
        "diamond",
        "retain",
        (step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")),
        "Succeed",
        {"a": "Completed", "b": "Completed", "c": "Completed", "d": "Completed"},
    ),
    FlowCase(
        "fanin",
        "delete",
        (step("a"), step("b"), step("c"), step("d", "a", "b", "c")),
        "Succeed",
        {"a": "Completed", "b": "Completed", "c": "Completed", "d": "Completed"},
    ),
    # A Failed Job some step waits for is an outcome, not a failure; `c` waits for a Completed
    # `bad` and is skipped, and so is `d`, which depends on it.
    FlowCase(
        "rescue",
        "delete",
        (
            step("bad"),
            step("a", "bad", phases=("Failed",)),
            step("report", "bad", phases=("Completed", "Failed")),
            step("c", "bad"),
            step("d", "c"),
        ),
        "Succeed",
        {"bad": "Failed", "a": "Completed", "report": "Completed"},
    ),
    # Nothing handles the failure: the flow Fails, `a` never runs, the Jobs stay despite delete.
    FlowCase(
        "broken",
        "delete",
        (step("bad"), step("a", "bad")),
        "Failed",
        {"bad": "Failed"},
    ),
    # A Succeeded `delete` flow deletes its Jobs and persists Succeed in one sync: a fault or a
    # kill between the two is one request wide, so many such flows give it enough chances.
    *(
        FlowCase(
            f"wide{i:02d}",
            "delete",
            (step("a"), step("b"), step("c"), step("d")),
            "Succeed",
            {"a": "Completed", "b": "Completed", "c": "Completed", "d": "Completed"},
        )
        for i in range(WIDE_FLOWS)
    ),
)


def phase_of(obj: dict[str, Any]) -> str:
    return str(((obj.get("status") or {}).get("state") or {}).get("phase") or "")


def flow_problems(case: FlowCase, flow: dict[str, Any] | None, jobs: dict[str, Any]) -> list[str]:
    """How the flow's end state differs from what its spec implies (empty: it is there)."""
    if flow is None:
        return [f"{case.name}: the JobFlow is gone"]
    status = flow.get("status") or {}
    problems = []
    if phase_of(flow) != case.phase:
        problems.append(f"{case.name}: phase {phase_of(flow)!r}, not {case.phase}")
    expected_lists = case.lists()
    for key in STATUS_LISTS:
        got = sorted(status.get(key) or [])
        if got != expected_lists.get(key, []):
            problems.append(f"{case.name}: status.{key} {got}, not {expected_lists.get(key, [])}")
    wanted = {case.job(s): p for s, p in case.jobs.items()}
    entries = {e.get("name"): e.get("state") for e in status.get("jobStatusList") or []}
    if entries != wanted:
        problems.append(f"{case.name}: jobStatusList {entries}, not {wanted}")
    conditions = {name: c.get("phase") for name, c in (status.get("conditions") or {}).items()}
    if conditions != wanted:
        problems.append(f"{case.name}: conditions {conditions}, not {wanted}")
    left = {name: phase_of(j) for name, j in jobs.items() if name.startswith(f"{case.name}-")}
    if left != (wanted if case.keeps_jobs else {}):
        problems.append(f"{case.name}: the Jobs left are {left} (jobRetainPolicy {case.retain})")
    return problems


def template_lists() -> dict[str, list[str]]:
    """Each template's `jobDependsOnList` once every flow is over: the Jobs left, by template."""
    out: dict[str, list[str]] = {name: [] for name in TEMPLATES}
    for case in FLOWS:
        if case.keeps_jobs:
            for step_name in case.jobs:
                out[step_name].append(case.job(step_name))
    return {name: sorted(jobs) for name, jobs in out.items()}


def template_problems(templates: dict[str, Any]) -> list[str]:
    problems = []
    for name, wanted in template_lists().items():
        got = ((templates.get(name) or {}).get("status") or {}).get("jobDependsOnList") or []
        if sorted(got) != wanted:
            problems.append(f"JobTemplate {name}: jobDependsOnList {sorted(got)}, not {wanted}")
    return problems


def churn(watch: AddedWatch) -> dict[str, list[str]]:
    """Names ever held by more than one object."""
    return {name: uids for name, uids in watch.snapshot().items() if len(uids) > 1}


def unexpected_jobs(jobs: AddedWatch) -> list[str]:
    """Jobs created for steps that never run. (That every other step's Job was created, the
    flows' jobStatusList says.)"""
    wanted = {case.job(s) for case in FLOWS for s in case.jobs}
    return sorted(set(jobs.snapshot()) - wanted)


# --- plain workloads -----------------------------------------------------------------------------

DEPLOYMENT = "web"
BATCH_JOB = "once"
DEPLOYMENT_MIN_MEMBER = 2
BATCH_MIN_MEMBER = 2


def pod_template(app: str, runtime: str, restart: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}, "annotations": {labels.SIM_RUNTIME_KEY: runtime}},
        "spec": {
            "schedulerName": "volcano",
            "restartPolicy": restart,
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": DEPLOYMENT,
            "namespace": WORKLOADS_NS,
            "annotations": {MIN_MEMBER_ANNOTATION: str(DEPLOYMENT_MIN_MEMBER)},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": DEPLOYMENT}},
            "template": pod_template(DEPLOYMENT, "600s", "Always"),
        },
    }


def batch_job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": BATCH_JOB,
            "namespace": WORKLOADS_NS,
            "annotations": {MIN_MEMBER_ANNOTATION: str(BATCH_MIN_MEMBER)},
        },
        "spec": {
            "parallelism": BATCH_MIN_MEMBER,
            "completions": BATCH_MIN_MEMBER,
            "backoffLimit": 0,
            "template": pod_template(BATCH_JOB, "3s", "Never"),
        },
    }


# --- the run -------------------------------------------------------------------------------------


class Clock:
    """One deadline for the whole run; each wait fails naming what it waited for."""

    def __init__(self, budget: float) -> None:
        self.started = time.monotonic()
        self.deadline = self.started + budget

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def wait(self, what: str, check: Callable[[], list[str]]) -> None:
        """Poll `check` (the problems left) until it returns none, within what is left of the
        run's budget."""
        left = max(self.deadline - time.monotonic(), 0.0)
        wait_for(check, lambda problems: not problems, what, left, interval=0.5)


def create(kube: Kube, resource: Resource, namespace: str | None, body: dict[str, Any]) -> None:
    try:
        retrying(lambda: kube.create(resource, namespace, body))
    except KubeError as exc:
        if exc.status != 409:  # created by an earlier attempt whose answer was lost
            raise


def by_name(kube: Kube, resource: Resource, namespace: str) -> dict[str, dict[str, Any]]:
    items, _ = retrying(lambda: kube.list(resource))
    return {
        str(o["metadata"]["name"]): o for o in items if o["metadata"].get("namespace") == namespace
    }


@dataclass
class Workloads:
    """Drives the Deployment and the batch Job through their steps; what it saw of their
    PodGroups is checked by the caller."""

    kube: Kube
    clock: Clock
    rs_uid: str = ""
    job_uid: str = ""

    def owner_uid(self, resource: Resource, name: str | None) -> str:
        for owner in by_name(self.kube, resource, WORKLOADS_NS).values():
            if name is None or owner["metadata"]["name"] == name:
                return str(owner["metadata"]["uid"])
        return ""

    def pods(self, app: str) -> list[dict[str, Any]]:
        return [
            p
            for p in by_name(self.kube, PODS, WORKLOADS_NS).values()
            if (p["metadata"].get("labels") or {}).get("app") == app
            and not p["metadata"].get("deletionTimestamp")
        ]

    def group_problems(self, owner_uid: str, min_member: int) -> list[str]:
        groups = by_name(self.kube, PODGROUPS, WORKLOADS_NS)
        name = f"podgroup-{owner_uid}"
        group = groups.get(name)
        if group is None:
            return [f"no PodGroup {name}; there are {sorted(groups)}"]
        if group["spec"].get("minMember") != min_member:
            return [f"PodGroup {name} has minMember {group['spec'].get('minMember')}"]
        return []

    def deployment_problems(self, replicas: int) -> list[str]:
        self.rs_uid = self.rs_uid or self.owner_uid(REPLICASETS, None)
        if not self.rs_uid:
            return ["no ReplicaSet yet"]
        problems = self.group_problems(self.rs_uid, DEPLOYMENT_MIN_MEMBER)
        pods = self.pods(DEPLOYMENT)
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        if len(pods) != replicas or len(running) != replicas:
            problems.append(f"{len(pods)} pods, {len(running)} Running, not {replicas}")
        unnamed = [
            p["metadata"]["name"]
            for p in pods
            if (p["metadata"].get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
            != f"podgroup-{self.rs_uid}"
        ]
        if unnamed:
            problems.append(f"pods not in podgroup-{self.rs_uid}: {unnamed}")
        return problems

    def batch_problems(self) -> list[str]:
        self.job_uid = self.job_uid or self.owner_uid(BATCH_JOBS, BATCH_JOB)
        if not self.job_uid:
            return ["no batch Job yet"]
        problems = self.group_problems(self.job_uid, BATCH_MIN_MEMBER)
        job = by_name(self.kube, BATCH_JOBS, WORKLOADS_NS).get(BATCH_JOB) or {}
        succeeded = int((job.get("status") or {}).get("succeeded") or 0)
        if succeeded != BATCH_MIN_MEMBER:
            problems.append(f"batch Job: {succeeded} pods succeeded")
        return problems

    def no_groups_left(self) -> list[str]:
        groups = sorted(by_name(self.kube, PODGROUPS, WORKLOADS_NS))
        return [f"PodGroups left after their owners were deleted: {groups}"] if groups else []

    def scale(self, replicas: int) -> None:
        retrying(
            lambda: self.kube.merge_patch(
                DEPLOYMENTS, WORKLOADS_NS, DEPLOYMENT, {"spec": {"replicas": replicas}}
            )
        )

    def run(self) -> None:
        create(self.kube, DEPLOYMENTS, WORKLOADS_NS, deployment(2))
        create(self.kube, BATCH_JOBS, WORKLOADS_NS, batch_job())
        self.clock.wait("the Deployment's PodGroup at 2", lambda: self.deployment_problems(2))
        self.scale(4)
        self.clock.wait("the Deployment scaled up to 4", lambda: self.deployment_problems(4))
        self.scale(2)
        self.clock.wait("the Deployment scaled down to 2", lambda: self.deployment_problems(2))
        self.clock.wait("the batch Job and its PodGroup", self.batch_problems)
        for resource, name in ((DEPLOYMENTS, DEPLOYMENT), (BATCH_JOBS, BATCH_JOB)):
            retrying(
                lambda r=resource, n=name: self.kube.delete(
                    r, WORKLOADS_NS, n, propagation="Background"
                )
            )
        self.clock.wait("the workloads' PodGroups gone with their owners", self.no_groups_left)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("faultsuite-flows"),
        simulator=True,
        webhook=False,
        controller=False,
        nodes=4,
        fault_rate=FAULT_RATE,
        extra_args=("--fault-seed", str(SEED)),
    ) as running:
        yield running


def test_flows_and_workload_podgroups_survive_faults_and_kills(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    kube = Kube(cluster.api_client(), qps=0, request_timeout=5.0)
    for namespace in (FLOWS_NS, WORKLOADS_NS):
        create(kube, NAMESPACES, None, {"metadata": {"name": namespace}})
    jobs = AddedWatch(kube, JOBS, FLOWS_NS)
    groups = AddedWatch(kube, PODGROUPS, WORKLOADS_NS)
    pods = PodWatch(kube)
    for watch in (jobs, groups):
        watch.start()
    threading.Thread(target=pods.run, name="pod-watch", daemon=True).start()
    for name, spec in TEMPLATES.items():
        body = {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobTemplate",
            "metadata": {"name": name, "namespace": FLOWS_NS},
            "spec": spec,
        }
        create(kube, JOBTEMPLATES, FLOWS_NS, body)
    log = tmp_path / "controller.log"
    killer = Killer(cluster, log, KILLS_AT)
    clock = Clock(DEADLINE)
    killer.start()
    try:
        for case in FLOWS:
            create(kube, JOBFLOWS, FLOWS_NS, case.body())
        Workloads(kube, clock).run()

        def flows_over() -> list[str]:
            flows = by_name(kube, JOBFLOWS, FLOWS_NS)
            left = by_name(kube, JOBS, FLOWS_NS)
            problems = [
                p for case in FLOWS for p in flow_problems(case, flows.get(case.name), left)
            ]
            problems += template_problems(by_name(kube, JOBTEMPLATES, FLOWS_NS))
            if not killer.done.is_set():
                problems.append(f"{killer.kills} of {len(KILLS_AT)} controller kills so far")
            return problems

        clock.wait("every flow's end state", flows_over)
    finally:
        killer.stop()
        for watch in (jobs, groups):
            watch.stop.set()
        pods.stop.set()
    wall = clock.elapsed()
    text = log.read_text(errors="replace")
    summary = {
        "flows": len(FLOWS),
        "flow_jobs": sum(len(c.jobs) for c in FLOWS),
        "workloads": 2,
        "fault_rate": FAULT_RATE,
        "faults_injected": faults_injected(cluster),
        "controller_kills": killer.kills,
        "job_uid_churn": len(churn(jobs)),
        "podgroup_uid_churn": len(churn(groups)),
        "pod_duplicates": len(pods.duplicates),
        "watch_relists": jobs.relists + groups.relists - 2,
        "wall_seconds": round(wall, 1),
    }
    print("fault suite (flows, workloads) summary:", json.dumps(summary, sort_keys=True))
    assert killer.kills == len(KILLS_AT)
    assert churn(jobs) == {}, f"flow Jobs created more than once: {churn(jobs)}\n{text[-3000:]}"
    assert unexpected_jobs(jobs) == [], "Jobs created for steps that never run"
    if jobs.relists == 1:  # no gap: the watch saw every Job the flows created
        missed = {c.job(s) for c in FLOWS for s in c.jobs} - set(jobs.snapshot())
        assert not missed, f"the Job watch missed {sorted(missed)}"
    assert churn(groups) == {}, f"workload PodGroups recreated: {churn(groups)}"
    assert len(groups.snapshot()) == 2, f"PodGroups other than one per workload: {groups.uids}"
    assert pods.duplicates == [], f"two live pods shared a job/task/index: {pods.duplicates}"
