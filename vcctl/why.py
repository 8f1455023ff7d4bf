"""`vcjob job why NAME`: one screen from the Job to its PodGroup, its Queue, the pods that are
not running and why, and what would unblock it. Pure: the command fetches, this renders."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from shared import conditions, labels
from shared.models import FINISHED_PHASES
from shared.wire import (
    WireObject,
    container_statuses,
    dig,
    job_state,
    metadata,
    name_of,
    spec_of,
    status_of,
)

# How many pods and events per pod are shown: one screen.
MAX_PODS: Final = 8
EVENTS_PER_OBJECT: Final = 2
# The phases in which the controller has deleted the job's PodGroup for good.
FINISHED: Final = frozenset(phase.value for phase in FINISHED_PHASES)


@dataclass(frozen=True)
class WhyFacts:
    job: WireObject
    pod_group: WireObject | None = None
    # The job's Queue; None when it does not exist.
    queue: WireObject | None = None
    pods: Sequence[WireObject] = ()
    events: Sequence[WireObject] = field(default_factory=list)
    # Kubernetes' own PodGroups (scheduling.k8s.io) of a job kube-scheduler gang-schedules: its
    # gang, or its tasks' under the CompositePodGroup that makes them one.
    native_pod_groups: Sequence[WireObject] = ()
    native_composite: WireObject | None = None
    # Kueue's Workload of the job; for a job MultiKueue dispatches, each worker cluster's copy of
    # it by cluster name (or why it could not be read).
    workload: WireObject | None = None
    worker_workloads: Mapping[str, WireObject | str] = field(default_factory=dict)


def dispatched_by_multikueue(job: Mapping[str, Any]) -> bool:
    return bool(dig(job, "spec", "managedBy") == labels.MANAGED_BY_MULTIKUEUE)


def clusters_to_ask(workload: Mapping[str, Any] | None) -> list[str]:
    """The worker clusters whose copy of the Workload explains the job: the one running it, else
    those MultiKueue offered it to."""
    status = status_of(workload)
    if _condition_message(workload or {}, "Finished")[0] == "True":
        return []  # MultiKueue removed the copies
    if status.get("clusterName"):
        return [str(status["clusterName"])]
    return [str(c) for c in status.get("nominatedClusterNames") or []]


def _condition_message(workload: Mapping[str, Any], type_: str) -> tuple[str, str]:
    """The condition's status and what it says (its message, else its reason)."""
    cond = conditions.find_condition(dig(workload, "status", "conditions"), type_)
    if cond is None:
        return "", ""
    return str(cond.get("status")), str(cond.get("message") or cond.get("reason") or "")


def multikueue_lines(
    workload: Mapping[str, Any] | None, workers: Mapping[str, WireObject | str]
) -> tuple[list[str], str]:
    """Where MultiKueue runs the job, or what holds it; and what would unblock it."""
    if workload is None:
        return (
            ["MultiKueue: the job has no Workload yet (is vcjob's controller running here, with "
             "Kueue's CRDs installed?)"],
            "check that vcjob's controller runs on this (the manager) cluster",
        )  # fmt: skip
    status = status_of(workload)
    lines: list[str] = []
    hint = ""
    finished, finished_message = _condition_message(workload, "Finished")
    reserved, reserved_message = _condition_message(workload, "QuotaReserved")
    where = f" on worker cluster {status['clusterName']}" if status.get("clusterName") else ""
    if finished == "True":
        lines.append(f"MultiKueue: finished{where} ({finished_message})")
    elif where:
        lines.append(f"MultiKueue: runs{where}")
    elif reserved != "True":
        lines.append(f"MultiKueue: waits in the manager's ClusterQueue: {reserved_message}")
        hint = "the manager's ClusterQueue must have room for the job"
    else:
        offered = ", ".join(clusters_to_ask(workload)) or "none yet"
        lines.append(f"MultiKueue: no worker cluster has admitted it (offered to {offered})")
        hint = "a worker cluster's ClusterQueue must have room for the job (its reason above)"
    for check in status.get("admissionChecks") or []:
        if check.get("message"):
            lines.append(
                f"  Admission check {check.get('name')}: {check.get('state')}: {check['message']}"
            )
    for cluster, copy in workers.items():
        if isinstance(copy, str):
            lines.append(f"  {cluster}: {copy}")
            continue
        state, message = _condition_message(copy, "QuotaReserved")
        admitted, _ = _condition_message(copy, "Admitted")
        verdict = "admitted" if admitted == "True" else "quota reserved" if state == "True" else ""
        lines.append(f"  {cluster}: {verdict or message or 'not looked at by its Kueue yet'}")
    lines.append(
        "Pods: on the worker cluster (the Job there has the same name; its status is mirrored here)"
    )
    return lines, hint


#: kube-scheduler's condition on its PodGroup (Kubernetes 1.37).
INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"


def native_gang_line(pod_group: Mapping[str, Any]) -> tuple[str, bool]:
    """One line on kube-scheduler's gang, and whether it says the gang cannot be placed."""
    gang = dig(pod_group, "spec", "schedulingPolicy", "gang") or {}
    head = f"Gang {name_of(pod_group)} (kube-scheduler): minCount {gang.get('minCount', '-')}, "
    for cond in dig(pod_group, "status", "conditions") or []:
        if cond.get("type") != INITIALLY_SCHEDULED:
            continue
        if cond.get("status") == "True":
            return head + "placed", False
        detail = str(cond.get("message") or "")
        return head + f"not placed: {cond.get('reason') or 'Unschedulable'}" + (
            f": {detail}" if detail else ""
        ), True
    return head + "not looked at by kube-scheduler yet", False


def native_gang_lines(
    pod_groups: Sequence[Mapping[str, Any]], composite: Mapping[str, Any] | None
) -> tuple[list[str], bool]:
    """The lines on kube-scheduler's gang (a composite one: a line for it, then one per task's
    PodGroup, which carry kube-scheduler's verdict), and whether one says it cannot be placed."""
    lines: list[str] = []
    blocked = False
    indent = ""
    if composite is not None:
        gang = dig(composite, "spec", "schedulingPolicy", "gang") or {}
        lines.append(
            f"Composite gang {name_of(composite)} (kube-scheduler): every task's gang, "
            f"minGroupCount {gang.get('minGroupCount', '-')}"
        )
        indent = "  "
    for pod_group in sorted(pod_groups, key=name_of):
        line, not_placed = native_gang_line(pod_group)
        lines.append(indent + line)
        blocked = blocked or not_placed
    return lines, blocked


def _resources(value: Any) -> str:
    if not isinstance(value, Mapping) or not value:
        return "-"
    return ",".join(f"{k}={v}" for k, v in sorted(value.items()))


def job_reason(job: Mapping[str, Any]) -> tuple[str, str]:
    """(reason, message): the controller's `status.reason` with its condition, else Volcano's
    state."""
    status = status_of(job)
    typed = status.get("typedConditions") or []
    for type_ in (conditions.FAILED, conditions.BLOCKED):
        found = conditions.find_condition(typed, type_)
        if found is not None and found.get("status") == "True":
            return str(found.get("reason") or type_), str(found.get("message") or "")
    state = job_state(job)
    return str(state.get("reason") or ""), str(state.get("message") or "")


def missing_pod_group(job: Mapping[str, Any]) -> str:
    """What a job without a PodGroup means, from what the controller does with it: deleted when
    the job finishes (Completed, Failed, Terminated), when it is suspended (Aborting, Aborted, or
    `spec.suspend`) and for a full restart; otherwise not created yet."""
    phase = dig(job, "status", "state", "phase") or ""
    if phase in FINISHED:
        return "none (deleted when the job finished)"
    if phase in ("Aborting", "Aborted") or dig(job, "spec", "suspend") is True:
        return "none (deleted when the job was suspended; resuming creates a new one)"
    if phase == "Restarting":
        return "none (deleted for the restart; a new one comes with the new pods)"
    return "none yet"


#: How the gang scheduler ends a message about a pod larger than every node.
NO_NODE_FITS = "no node can run it"


def unseen_by_scheduler(pod_group: Mapping[str, Any] | None) -> bool:
    """A Pending PodGroup without a condition: a gang scheduler that looks at a group either
    admits it or says why not, so none has looked at this one (it may not be running)."""
    return (
        pod_group is not None
        and (dig(pod_group, "status", "phase") or "Pending") == "Pending"
        and not dig(pod_group, "status", "conditions")
    )


def unblock_hint(
    reason: str, job: Mapping[str, Any], queue_name: str, *, no_node_fits: bool = False
) -> str:
    """What to do about `reason`; `no_node_fits`: a pod is larger than every node, so freeing
    or adding capacity of the same size would not help."""
    namespace = dig(job, "metadata", "namespace") or "default"
    if reason == "Unschedulable" and no_node_fits:
        return (
            "ask for less per pod (requests), or add a node large enough for the pod the reason "
            "names: freeing capacity elsewhere does not help"
        )
    hints = {
        "QueueClosed": f"open the queue: vcjob queue operate -n {queue_name} -a open",
        "QueueMissing": f"create the queue: vcjob queue create -n {queue_name}",
        "MissingPVC": f"create the PersistentVolumeClaim named above in namespace {namespace}",
        "Unschedulable": "free or add capacity (nodes, the queue's capability), or ask for less "
        "(requests, replicas, minAvailable)",
        "ImagePullBackOff": "fix the image name, or the registry and its pull secret",
        "DeadlineExceeded": "the job ran past spec.activeDeadlineSeconds: create it again with "
        "a longer deadline",
        "BackoffLimitExceeded": "the retries ran out: read the failed pods' logs and exit codes "
        "above, fix the cause and create the job again",
        "MaxRetryExceeded": "the retries ran out: read the failed pods' logs and exit codes "
        "above, fix the cause and create the job again",
        "InfrastructureRetriesExceeded": "the infrastructure restarted the job more often than "
        "spec.retryPolicy.infrastructureRetries allows: check the nodes, then create it again",
    }
    return hints.get(reason, "")


def _events_of(events: Sequence[WireObject], kind: str, name: str) -> list[WireObject]:
    mine = [
        e
        for e in events
        if dig(e, "involvedObject", "kind") == kind and dig(e, "involvedObject", "name") == name
    ]
    mine.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return mine[-EVENTS_PER_OBJECT:]


def _pod_problem(pod: Mapping[str, Any]) -> str:
    status = status_of(pod)
    parts: list[str] = []
    if status.get("reason"):
        parts.append(str(status["reason"]))
    for cond in status.get("conditions") or []:
        if cond.get("status") == "False" and cond.get("reason"):
            parts.append(
                f"{cond.get('type')}={cond['reason']}: {cond.get('message') or ''}".strip()
            )
    for container in container_statuses(pod):
        state = container.get("state") or {}
        if waiting := state.get("waiting"):
            parts.append(f"{container.get('name')} waiting: {waiting.get('reason', '')}")
        if (terminated := state.get("terminated")) and terminated.get("exitCode"):
            parts.append(
                f"{container.get('name')} exit code {terminated['exitCode']}"
                + (f" ({terminated['reason']})" if terminated.get("reason") else "")
            )
    return "; ".join(parts)


def explain(facts: WhyFacts) -> str:
    job = facts.job
    meta, spec, status = metadata(job), spec_of(job), status_of(job)
    phase = dig(status, "state", "phase") or (
        "not dispatched yet" if dispatched_by_multikueue(job) else "Unknown"
    )
    reason, message = job_reason(job)
    queue_name = str(spec.get("queue") or "default")
    out: list[str] = [f"Job {meta.get('namespace')}/{meta.get('name')}: {phase}"]
    if reason:
        out.append(f"  Reason:   {reason}" + (f": {message}" if message else ""))
    counts = status.get("restartCounts") or {}
    out.append(
        f"  Restarts: retryCount {status.get('retryCount', 0)} of maxRetry "
        f"{spec.get('maxRetry', 3)}; by cause: application {counts.get('application', 0)}, "
        f"infrastructure {counts.get('infrastructure', 0)}, operator {counts.get('operator', 0)}"
    )
    if spec.get("activeDeadlineSeconds"):
        out.append(
            f"  Deadline: activeDeadlineSeconds {spec['activeDeadlineSeconds']}, running since "
            f"{status.get('startTime') or '-'} ({status.get('suspendedSeconds') or 0}s suspended)"
        )
    history = status.get("attempts") or []
    ended = [a for a in history if a.get("endTime")]
    if ended:
        last = ended[-1]
        failed = ", ".join(
            str(f.get("name"))
            + (f" (exit code {f['exitCode']})" if f.get("exitCode") is not None else "")
            for f in last.get("failedPods") or []
        )
        out.append(
            f"  Attempt {last.get('index')} ended {last.get('endTime')}"
            + (f" ({last['cause']})" if last.get("cause") else "")
            + f": {last.get('reason') or '-'}"
            + (f"; failed pods: {failed}" if failed else "")
        )
    if dispatched_by_multikueue(job):
        lines, hint = multikueue_lines(facts.workload, facts.worker_workloads)
        out += lines
        if hint:
            out.append(f"To unblock: {hint}")
        return "\n".join(out)
    pg = facts.pod_group
    if pg is None:
        out.append(f"PodGroup: {missing_pod_group(job)}")
    else:
        out.append(
            f"PodGroup {name_of(pg)}: {dig(pg, 'status', 'phase') or 'Pending'}, minMember "
            f"{dig(pg, 'spec', 'minMember')}, minResources "
            f"{_resources(dig(pg, 'spec', 'minResources'))}"
        )
        for cond in dig(pg, "status", "conditions") or []:
            if cond.get("status") == "True" and cond.get("type") == "Unschedulable":
                out.append(f"  {cond.get('type')}: {cond.get('message') or cond.get('reason')}")
    native_lines, native_blocked = native_gang_lines(
        facts.native_pod_groups, facts.native_composite
    )
    out.extend(native_lines)
    queue = facts.queue
    if queue is None:
        out.append(f"Queue {queue_name}: does not exist")
    else:
        qs = status_of(queue)
        out.append(
            f"Queue {queue_name}: {qs.get('state') or 'Open'}, capability "
            f"{_resources(dig(queue, 'spec', 'capability'))}, allocated "
            f"{_resources(qs.get('allocated'))}"
        )
    stuck = [p for p in facts.pods if dig(p, "status", "phase") != "Running"]
    running = len(facts.pods) - len(stuck)
    out.append(f"Pods: {running} running, {len(stuck)} not running")
    for pod in sorted(stuck, key=name_of)[:MAX_PODS]:
        problem = _pod_problem(pod)
        out.append(
            f"  {name_of(pod)}: {dig(pod, 'status', 'phase') or 'Pending'}"
            + (f" - {problem}" if problem else "")
        )
        for event in _events_of(facts.events, "Pod", name_of(pod)):
            out.append(f"    event {event.get('reason')}: {event.get('message')}")
    if len(stuck) > MAX_PODS:
        out.append(f"  ... and {len(stuck) - MAX_PODS} more")
    job_events = _events_of(facts.events, "Job", str(meta.get("name")))
    if pg is not None:
        job_events += _events_of(facts.events, "PodGroup", name_of(pg))
    for event in job_events:
        out.append(f"Event {event.get('reason')}: {event.get('message')}")
    no_node_fits = NO_NODE_FITS in message or any(
        NO_NODE_FITS in str(cond.get("message") or "")
        for cond in dig(pg, "status", "conditions") or []
        if cond.get("type") == "Unschedulable" and cond.get("status") == "True"
    )
    hint = unblock_hint(reason, job, queue_name, no_node_fits=no_node_fits)
    if not hint and native_blocked:
        hint = unblock_hint("Unschedulable", job, queue_name)
    if hint:
        out.append(f"To unblock: {hint}")
    elif phase in ("Pending",) and not facts.native_pod_groups and unseen_by_scheduler(pg):
        scheduler = str(spec.get("schedulerName") or "volcano")
        out.append(
            f"To unblock: no scheduler has looked at the PodGroup yet (no condition on it): is "
            f"the {scheduler!r} scheduler running? (on `vcjob local up`, the node agent: "
            "logs/simulator.log)"
        )
    elif phase in ("Pending",):
        out.append("To unblock: nothing found blocking the job; it waits for the scheduler")
    return "\n".join(out)
