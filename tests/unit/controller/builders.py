"""Fluent builders for planner tests (JobSet-wrapper style) and a tiny in-memory world that
applies plans the way the shell does (annotate → delete → create → update → status)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from controller.job.decide import podgroup
from controller.job.decide.model import Observed, Plan, PlanSettings, PodEdge
from controller.job.decide.plan import reconcile
from controller.job.decide.plugins.ssh import needs_generated_key
from controller.job.shell.sshkeys import generate_key_pair
from shared import labels
from shared.models import Job

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
UID = "11111111-2222-3333-4444-555555555555"

Wire = dict[str, Any]


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class JobBuilder:
    def __init__(self, name: str, namespace: str = "default", uid: str = UID) -> None:
        self._job: Wire = {
            "apiVersion": labels.BATCH_API_VERSION,
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid,
                "generation": 1,
                "creationTimestamp": ts(T0 - timedelta(minutes=1)),
            },
            "spec": {"schedulerName": "volcano", "queue": "default", "tasks": []},
        }
        self._explicit_min = False

    @property
    def spec(self) -> Wire:
        spec: Wire = self._job["spec"]
        return spec

    def task(
        self,
        name: str,
        replicas: int = 1,
        *,
        min_available: int | None = None,
        max_retry: int | None = None,
        template: Wire | None = None,
        cpu: str | None = None,
        depends_on: list[str] | None = None,
        iteration: str | None = None,
        priority_class: str | None = None,
    ) -> JobBuilder:
        tpl = template or {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": name, "image": "busybox", "command": ["true"]}],
            },
        }
        tpl = copy.deepcopy(tpl)
        if cpu:
            tpl["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        if priority_class:
            tpl["spec"]["priorityClassName"] = priority_class
        task: Wire = {"name": name, "replicas": replicas, "template": tpl}
        task["minAvailable"] = replicas if min_available is None else min_available
        if max_retry is not None:
            task["maxRetry"] = max_retry
        if depends_on:
            task["dependsOn"] = {"name": depends_on}
            if iteration:
                task["dependsOn"]["iteration"] = iteration
        self.spec["tasks"].append(task)
        if not self._explicit_min:
            self.spec["minAvailable"] = sum(t["minAvailable"] for t in self.spec["tasks"])
        return self

    def policy(
        self,
        *,
        action: str,
        event: str | None = None,
        events: list[str] | None = None,
        exit_code: int | None = None,
        timeout: str | None = None,
        task: str | None = None,
    ) -> JobBuilder:
        pol: Wire = {"action": action}
        if event:
            pol["event"] = event
        if events:
            pol["events"] = events
        if exit_code is not None:
            pol["exitCode"] = exit_code
        if timeout:
            pol["timeout"] = timeout
        if task is None:
            self.spec.setdefault("policies", []).append(pol)
        else:
            target = next(t for t in self.spec["tasks"] if t["name"] == task)
            target.setdefault("policies", []).append(pol)
        return self

    def min_available(self, n: int) -> JobBuilder:
        self._explicit_min = True
        self.spec["minAvailable"] = n
        return self

    def min_success(self, n: int) -> JobBuilder:
        self.spec["minSuccess"] = n
        return self

    def max_retry(self, n: int) -> JobBuilder:
        self.spec["maxRetry"] = n
        return self

    def ttl(self, seconds: int) -> JobBuilder:
        self.spec["ttlSecondsAfterFinished"] = seconds
        return self

    def scheduler(self, name: str) -> JobBuilder:
        self.spec["schedulerName"] = name
        return self

    def priority_class(self, name: str) -> JobBuilder:
        self.spec["priorityClassName"] = name
        return self

    def plugin(self, name: str, *args: str) -> JobBuilder:
        self.spec.setdefault("plugins", {})[name] = list(args)
        return self

    def success_rule(
        self, *, task: str | None = None, indexes: str | None = None, count: int | None = None
    ) -> JobBuilder:
        rule: Wire = {}
        if task:
            rule["taskName"] = task
        if indexes is not None:
            rule["succeededIndexes"] = indexes
        if count is not None:
            rule["succeededCount"] = count
        self.spec.setdefault("successPolicy", {"rules": []})["rules"].append(rule)
        return self

    def volume(
        self, mount_path: str, *, claim_name: str | None = None, claim: Wire | None = None
    ) -> JobBuilder:
        vol: Wire = {"mountPath": mount_path}
        if claim_name:
            vol["volumeClaimName"] = claim_name
        if claim is not None:
            vol["volumeClaim"] = claim
        self.spec.setdefault("volumes", []).append(vol)
        return self

    def phase(self, phase: str, **status: Any) -> JobBuilder:
        st = self._job.setdefault("status", {})
        st["state"] = {"phase": phase, "lastTransitionTime": ts(T0 - timedelta(seconds=30))}
        st.setdefault("conditions", [{"status": phase, "lastTransitionTime": ts(T0)}])
        st.update(status)
        return self

    def build(self) -> Wire:
        return copy.deepcopy(self._job)


def job(name: str = "j", **kwargs: Any) -> JobBuilder:
    return JobBuilder(name, **kwargs)


def pod_of(
    j: Wire,
    task: str,
    index: int,
    *,
    phase: str = "Running",
    exit_code: int | None = None,
    exit_codes: list[int] | None = None,
    version: int | None = None,
    restarts: int = 0,
    deleting: bool = False,
    out_of_sync: bool = False,
    ready: bool = True,
    uid: str | None = None,
    created: datetime | None = None,
) -> Wire:
    name = f"{j['metadata']['name']}-{task}-{index}"
    if version is None:
        version = int((j.get("status") or {}).get("version") or 0)
    annotations = {
        labels.TASK_SPEC_KEY: task,
        labels.TASK_INDEX_KEY: str(index),
        labels.JOB_NAME_KEY: j["metadata"]["name"],
        labels.JOB_VERSION_KEY: str(version),
    }
    if out_of_sync:
        annotations[labels.OUT_OF_SYNC_KEY] = "true"
    meta: Wire = {
        "name": name,
        "namespace": j["metadata"]["namespace"],
        "uid": uid or f"pod-{name}-{version}",
        "creationTimestamp": ts(created or T0 - timedelta(seconds=20)),
        "labels": {
            labels.JOB_NAME_KEY: j["metadata"]["name"],
            labels.JOB_NAMESPACE_KEY: j["metadata"]["namespace"],
            labels.TASK_SPEC_KEY: task,
            labels.TASK_INDEX_KEY: str(index),
        },
        "annotations": annotations,
        "ownerReferences": [
            {
                "apiVersion": labels.BATCH_API_VERSION,
                "kind": "Job",
                "name": j["metadata"]["name"],
                "uid": j["metadata"]["uid"],
                "controller": True,
            }
        ],
    }
    if deleting:
        meta["deletionTimestamp"] = ts(T0)
    codes = exit_codes if exit_codes is not None else ([exit_code] if exit_code is not None else [])
    statuses = []
    for i, code in enumerate(codes or [None]):
        st: Wire = {"name": f"c{i}", "ready": ready and phase == "Running", "restartCount": 0}
        if code is not None:
            st["state"] = {"terminated": {"exitCode": code}}
        elif phase == "Running":
            st["state"] = {"running": {}}
        statuses.append(st)
    statuses[0]["restartCount"] = restarts
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": task, "image": "busybox"}]},
        "status": {"phase": phase, "containerStatuses": statuses},
    }


def pod_group_of(j: Wire, phase: str = "Inqueue") -> Wire:
    pg = podgroup.build_pod_group(Job.from_wire(j), {})
    pg["metadata"]["uid"] = "pg-uid-1"
    pg["status"] = {"phase": phase}
    return pg


def observe(j: Wire, pods: list[Wire] | None = None, now: datetime = T0, **kw: Any) -> Observed:
    if "pod_group" not in kw:
        kw["pod_group"] = pod_group_of(j)
    return Observed(job=j, pods=list(pods or []), now=now, **kw)


def with_ssh_key(observed: Observed, settings: PlanSettings) -> Observed:
    """What the shell does before planning: a fresh key pair when the ssh plugin needs one."""
    if observed.ssh_key is None and needs_generated_key(
        observed.job, observed.children, observed.memory
    ):
        return replace(observed, ssh_key=generate_key_pair(settings.ssh_key_type))
    return observed


def plan_for(j: Wire, pods: list[Wire] | None = None, **kw: Any) -> Plan:
    settings = kw.pop("settings", PlanSettings())
    return reconcile(with_ssh_key(observe(j, pods, **kw), settings), settings)


def rounds(j: Wire, pods: list[Wire] | None = None, limit: int = 6, **kw: Any) -> list[Plan]:
    """Reconcile like the shell until the status stops changing: each plan's status, pod and
    PodGroup deletions and consumed Commands are fed into the next round (nothing is created)."""
    job_now = copy.deepcopy(j)
    live = list(pods or [])
    commands = list(kw.pop("commands", []))
    pod_group = kw.pop("pod_group", pod_group_of(j))
    memory = kw.pop("memory", None)
    plans: list[Plan] = []
    for _ in range(limit):
        plan = plan_for(job_now, live, commands=commands, pod_group=pod_group, memory=memory, **kw)
        plans.append(plan)
        gone = set(deleted_pods(plan))
        live = [p for p in live if p["metadata"]["name"] not in gone]
        group_deleted = any(r.kind == "PodGroup" for r in plan.delete)
        if group_deleted:
            pod_group = None
        commands = [c for c in commands if c["metadata"]["name"] not in plan.delete_commands]
        memory = plan.memory
        if plan.status is None and not gone and not group_deleted:
            break
        if plan.status is not None:
            job_now = {**job_now, "status": copy.deepcopy(plan.status)}
    return plans


def written_phases(plans: list[Plan]) -> list[str]:
    """The phases the plans wrote, in order, each once per change."""
    out: list[str] = []
    for plan in plans:
        phase = phase_of(plan)
        if phase is not None and (not out or out[-1] != phase):
            out.append(phase)
    return out


def created_pods(plan: Plan) -> list[str]:
    return [o["metadata"]["name"] for o in plan.create if o["kind"] == "Pod"]


def deleted_pods(plan: Plan) -> list[str]:
    return [r.name for r in plan.delete if r.kind == "Pod"]


def phase_of(plan: Plan) -> str | None:
    return None if plan.status is None else plan.status["state"]["phase"]


@dataclass
class World:
    """Applies plans like the shell: pods deleted vanish at once (no kubelet), new pods start
    Pending with a fresh uid; the scheduler admission is explicit (`admit`)."""

    job: Wire
    now: datetime = T0
    pods: dict[str, Wire] = field(default_factory=dict)
    pod_group: Wire | None = None
    children: dict[tuple[str, str], Wire] = field(default_factory=dict)
    memory: dict[str, Any] | None = None
    commands: list[Wire] = field(default_factory=list)
    edges: list[PodEdge] = field(default_factory=list)
    settings: PlanSettings = field(default_factory=PlanSettings)
    plans: list[Plan] = field(default_factory=list)
    deleted: bool = False
    serial: int = 0

    @property
    def phase(self) -> str:
        return str(((self.job.get("status") or {}).get("state") or {}).get("phase") or "")

    @property
    def status(self) -> Wire:
        return dict(self.job.get("status") or {})

    def observe(self) -> Observed:
        return Observed(
            job=copy.deepcopy(self.job),
            pods=[copy.deepcopy(p) for p in self.pods.values()],
            now=self.now,
            pod_group=copy.deepcopy(self.pod_group),
            commands=list(self.commands),
            children=copy.deepcopy(self.children),
            pod_edges=list(self.edges),
            memory=copy.deepcopy(self.memory),
        )

    def step(self, advance: timedelta = timedelta(seconds=1)) -> Plan:
        self.now += advance
        plan = reconcile(with_ssh_key(self.observe(), self.settings), self.settings)
        self.edges = []
        self.apply(plan)
        self.plans.append(plan)
        return plan

    def apply(self, plan: Plan) -> None:
        for ref in plan.annotate_out_of_sync:
            if ref.name in self.pods:
                self.pods[ref.name]["metadata"]["annotations"][labels.OUT_OF_SYNC_KEY] = "true"
        for ref in plan.delete:
            if ref.kind == "Pod":
                self.pods.pop(ref.name, None)
            elif ref.kind == "PodGroup":
                self.pod_group = None
            else:
                self.children.pop((ref.kind, ref.name), None)
        for obj in plan.create:
            obj = copy.deepcopy(obj)
            self.serial += 1
            obj["metadata"]["uid"] = f"uid-{self.serial}"
            obj["metadata"]["creationTimestamp"] = ts(self.now)
            if obj["kind"] == "Pod":
                obj["status"] = {"phase": "Pending"}
                self.pods.setdefault(obj["metadata"]["name"], obj)
            elif obj["kind"] == "PodGroup":
                self.pod_group = obj
            else:
                self.children.setdefault((obj["kind"], obj["metadata"]["name"]), obj)
        for obj in plan.update:
            if obj["kind"] == "PodGroup":
                self.pod_group = copy.deepcopy(obj)
            else:
                self.children[(obj["kind"], obj["metadata"]["name"])] = copy.deepcopy(obj)
        if plan.job_spec_patch:
            self.job["spec"].update(copy.deepcopy(plan.job_spec_patch["spec"]))
        if plan.status is not None:
            self.job["status"] = copy.deepcopy(plan.status)
        done = set(plan.delete_commands)
        self.commands = [c for c in self.commands if c["metadata"]["name"] not in done]
        self.memory = copy.deepcopy(plan.memory)
        if plan.delete_job:
            self.deleted = True

    def admit(self, phase: str = "Inqueue") -> None:
        assert self.pod_group is not None, "no PodGroup to admit"
        self.pod_group.setdefault("status", {})["phase"] = phase

    def set_pod(self, name: str, phase: str, exit_code: int | None = None) -> None:
        pod = self.pods[name]
        pod["status"]["phase"] = phase
        if exit_code is not None:
            pod["status"]["containerStatuses"] = [
                {"name": "c", "state": {"terminated": {"exitCode": exit_code}}}
            ]

    def set_all(self, phase: str, task: str | None = None) -> None:
        for pod in self.pods.values():
            if task is None or pod["metadata"]["labels"][labels.TASK_SPEC_KEY] == task:
                pod["status"]["phase"] = phase

    def evict(self, name: str) -> None:
        pod = self.pods.pop(name)
        self.edges.append(PodEdge("deleted", pod, by_controller=False))

    def command(self, action: str, name: str = "cmd", uid: str | None = None) -> None:
        self.commands.append(
            {
                "apiVersion": labels.BUS_API_VERSION,
                "kind": "Command",
                "metadata": {"name": name, "namespace": self.job["metadata"]["namespace"]},
                "action": action,
                "target": {
                    "apiVersion": labels.BATCH_API_VERSION,
                    "kind": "Job",
                    "name": self.job["metadata"]["name"],
                    "uid": uid or self.job["metadata"]["uid"],
                },
            }
        )

    def settle(self, steps: int = 5) -> None:
        for _ in range(steps):
            self.step()
