"""A step's dependency probes: the HTTP and TCP probes the shell runs, and the task-status probes
judged here from the target Job's task counts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.jobflow.decide.flow import as_list, as_object
from shared.wire import WireObject


@dataclass(frozen=True)
class NetworkProbe:
    """An HTTP GET or TCP connect the shell runs against every pod of one task of a target Job."""

    step: str
    target_job: str
    task: str
    port: int
    # None: a TCP probe.
    path: str | None = None
    header: tuple[str, str] | None = None

    @property
    def is_http(self) -> bool:
        return self.path is not None


@dataclass(frozen=True)
class ProbeOutcome:
    passed: bool
    detail: str = ""


def network_probes(step: str, entry: WireObject, target_job: str) -> list[NetworkProbe]:
    probe = as_object(as_object(entry.get("dependsOn")).get("probe"))
    out: list[NetworkProbe] = []
    for http in as_list(probe.get("httpGetList")):
        http = as_object(http)
        header = as_object(http.get("httpHeader"))
        out.append(
            NetworkProbe(
                step,
                target_job,
                str(http.get("taskName") or ""),
                int(http.get("port") or 0),
                path=str(http.get("path") or "/"),
                header=(str(header["name"]), str(header.get("value") or ""))
                if header.get("name")
                else None,
            )
        )
    for tcp in as_list(probe.get("tcpSocketList")):
        tcp = as_object(tcp)
        out.append(
            NetworkProbe(
                step, target_job, str(tcp.get("taskName") or ""), int(tcp.get("port") or 0)
            )
        )
    return out


def task_status_passes(job: WireObject, task: str, phase: str) -> bool:
    """Every replica of the task is in the pod phase (`taskStatusCount[task].phase[phase]`)."""
    tasks = as_list(as_object(job.get("spec")).get("tasks"))
    replicas = next(
        (int(as_object(t).get("replicas") or 0) for t in tasks if as_object(t).get("name") == task),
        None,
    )
    if replicas is None:
        return False
    counts = as_object(
        as_object(as_object(as_object(job.get("status")).get("taskStatusCount")).get(task)).get(
            "phase"
        )
    )
    return int(counts.get(phase) or 0) >= max(replicas, 1)


def probe_problems(
    step: str,
    entry: WireObject,
    targets: Mapping[str, WireObject],
    outcomes: Mapping[NetworkProbe, ProbeOutcome],
) -> list[str]:
    """What keeps the step's probes from passing (empty: they all pass)."""
    probe = as_object(as_object(entry.get("dependsOn")).get("probe"))
    problems: list[str] = []
    for name, job in targets.items():
        for status in as_list(probe.get("taskStatusList")):
            task = str(as_object(status).get("taskName") or "")
            phase = str(as_object(status).get("phase") or "")
            if not task_status_passes(job, task, phase):
                problems.append(f"task {task} of job {name} is not all {phase}")
        for check in network_probes(step, entry, name):
            outcome = outcomes.get(check)
            if outcome is None:
                problems.append(f"probe of task {check.task} of job {name} not run yet")
            elif not outcome.passed:
                problems.append(outcome.detail)
    return problems
