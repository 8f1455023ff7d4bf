"""What one JobFlow sync does, decided from (flow, templates, the flow's Jobs, probe results, now).

As Volcano's jobflow controller: each flow entry ("step") becomes the Job `<flow>-<step>` made
from the JobTemplate named like the step, created once every dependency target's Job is
Completed; the status lists the Jobs by phase (`pendingJobs` … `unKnowJobs`), keeps
`jobStatusList` with running histories and `conditions`, and moves `state.phase` Pending →
Running → Succeed or Failed; `jobRetainPolicy: delete` deletes the Jobs once the flow Succeeds.

What Volcano declares but never acts on, vcjob does:
- `dependsOn.phases` (vcjob's field): the target phases that meet the dependency (Completed,
  Failed, Terminated; default Completed). A Job that fails is then handled, not a flow failure.
  A step whose target ended in a phase it does not accept never runs; steps depending on it
  neither (they are "skipped").
- `dependsOn.probe`: task-status probes are judged here from the target Job's task counts;
  HTTP and TCP probes are run by the shell (`controller.jobflow.shell.probes`) and handed in. With a
  probe and no `phases`, the targets' phases do not matter: the probes decide.
- `patch.jobSpec`: merged into the template's spec (`merge_job_spec`).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, Literal

from controller.jobflow.decide.flow import (
    FAILURES,
    FINISHED,
    accepted_phases,
    as_list,
    as_object,
    job_name,
    object_string,
    steps_of,
    targets_of,
)
from controller.jobflow.decide.jobs import build_job
from controller.jobflow.decide.probes import (
    NetworkProbe,
    ProbeOutcome,
    network_probes,
    probe_problems,
)
from shared import rfc3339
from shared.duration import parse_duration
from shared.models.flow import (
    CREATED_BY_JOBTEMPLATE,
    FlowPhase,
    RetainPolicy,
)
from shared.wire import WireObject, phase_of

# Volcano's status lists: the phases listed under their own name (Completing and Terminating
# are known but listed nowhere); any other phase goes to unKnowJobs.
LISTED_PHASES: Final = {
    "Pending": "pendingJobs",
    "Running": "runningJobs",
    "Failed": "failedJobs",
    "Completed": "completedJobs",
    "Terminated": "terminatedJobs",
}


KNOWN_UNLISTED: Final = frozenset({"Completing", "Terminating"})


# How soon a flow waiting on a probe or a missing JobTemplate is looked at again.
RETRY_AFTER: Final = timedelta(seconds=3)


Verdict = Literal["ready", "wait", "probe", "skip"]


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass
class FlowPlan:
    create: list[WireObject] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    status: WireObject = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    requeue_after: timedelta | None = None


@dataclass
class _Steps:
    """Where each step stands: its Job's phase, or waiting / skipped / ready."""

    jobs: dict[str, WireObject]
    ready: list[str] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)
    # Waiting on a probe: nothing else wakes the flow up when it would pass, so it polls.
    probing: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)


def probes_to_run(flow: WireObject, jobs: list[WireObject]) -> list[NetworkProbe]:
    """The HTTP and TCP probes of steps not created yet whose target Jobs all exist."""
    flow_name = str(as_object(flow.get("metadata")).get("name") or "")
    by_name = {str(as_object(j.get("metadata")).get("name")): j for j in jobs}
    out: list[NetworkProbe] = []
    for step, entry in steps_of(flow).items():
        if job_name(flow_name, step) in by_name:
            continue
        targets = [job_name(flow_name, t) for t in targets_of(entry)]
        if targets and all(t in by_name for t in targets):
            for target in targets:
                out.extend(network_probes(step, entry, target))
    return out


def _classify(
    flow: WireObject,
    jobs: list[WireObject],
    outcomes: Mapping[NetworkProbe, ProbeOutcome],
) -> _Steps:
    flow_name = str(as_object(flow.get("metadata")).get("name") or "")
    steps = steps_of(flow)
    by_name = {str(as_object(j.get("metadata")).get("name")): j for j in jobs}
    state = _Steps(
        {s: by_name[job_name(flow_name, s)] for s in steps if job_name(flow_name, s) in by_name}
    )
    # Skipping spreads along the dependencies: go over the steps until nothing changes.
    changed = True
    while changed:
        changed = False
        for step, entry in steps.items():
            if step in state.jobs or step in state.skipped:
                continue
            verdict, detail = _dependency(flow_name, entry, steps, state, outcomes)
            if verdict == "skip":
                state.skipped.add(step)
                state.waiting.pop(step, None)
                state.probing.discard(step)
                changed = True
            elif verdict != "ready":
                state.waiting[step] = detail
                if verdict == "probe":
                    state.probing.add(step)
    state.ready = [
        s
        for s in steps
        if s not in state.jobs and s not in state.skipped and s not in state.waiting
    ]
    return state


def _dependency(
    flow_name: str,
    entry: WireObject,
    steps: Mapping[str, WireObject],
    state: _Steps,
    outcomes: Mapping[NetworkProbe, ProbeOutcome],
) -> tuple[Verdict, str]:
    """Whether the step can be created now, never ("skip"), or waits (for a Job or a probe)."""
    accepted = accepted_phases(entry)
    targets: dict[str, WireObject] = {}
    for target in targets_of(entry):
        if target in state.skipped or target not in steps:
            return "skip", f"target {target} never runs"
        job = state.jobs.get(target)
        if job is None:
            return "wait", f"waiting for job {job_name(flow_name, target)}"
        phase = phase_of(job)
        if accepted is not None and phase not in accepted:
            if phase in FINISHED:
                return "skip", f"job {job_name(flow_name, target)} ended {phase}"
            return "wait", f"waiting for job {job_name(flow_name, target)} ({phase or 'no phase'})"
        targets[job_name(flow_name, target)] = job
    problems = probe_problems(str(entry.get("name")), entry, targets, outcomes)
    if problems:
        return "probe", "; ".join(problems)
    return "ready", ""


def handled_failures(flow: WireObject) -> set[tuple[str, str]]:
    """(step, phase) pairs some step depends on: a Job ending so is expected, not a failure."""
    handled: set[tuple[str, str]] = set()
    for entry in steps_of(flow).values():
        phases = accepted_phases(entry)
        for target in targets_of(entry):
            for phase in phases or ():
                if phase in FAILURES:
                    handled.add((target, phase))
    return handled


def next_phase(flow: WireObject, state: _Steps) -> str:
    current = phase_of(flow)
    if current in (FlowPhase.SUCCEED, FlowPhase.FAILED):
        return current
    handled = handled_failures(flow)
    phases = {step: phase_of(job) for step, job in state.jobs.items()}
    if any(p in FAILURES and (s, p) not in handled for s, p in phases.items()):
        return FlowPhase.FAILED
    settled = all((phases.get(s) in FINISHED) or s in state.skipped for s in steps_of(flow))
    if settled:
        return FlowPhase.SUCCEED
    if any(p not in ("", "Pending") for p in phases.values()):
        return FlowPhase.RUNNING
    return FlowPhase.PENDING


format_time = rfc3339.format_time


def _histories(previous: WireObject | None, phase: str, now: str) -> list[WireObject]:
    """Volcano's running history: one entry per phase the Job was seen in."""
    histories = [dict(h) for h in as_list(as_object(previous).get("runningHistories"))]
    if not phase:
        return histories
    if not histories:
        return [{"startTimestamp": now, "state": phase}]
    if histories[-1].get("state") != phase:
        histories[-1]["endTimestamp"] = now
        histories.append({"startTimestamp": now, "state": phase})
    return histories


def flow_status(flow: WireObject, jobs: list[WireObject], phase: str, now: datetime) -> WireObject:
    """The status Volcano's controller writes: Jobs by phase, conditions, jobStatusList."""
    old = as_object(flow.get("status"))
    stamp = format_time(now)
    lists: dict[str, list[str]] = {key: [] for key in LISTED_PHASES.values()}
    unknown: list[str] = []
    conditions: dict[str, WireObject] = {}
    entries = [dict(e) for e in as_list(old.get("jobStatusList"))]
    position = {e.get("name"): i for i, e in enumerate(entries)}
    for job in sorted(jobs, key=lambda j: str(as_object(j.get("metadata")).get("name"))):
        meta = as_object(job.get("metadata"))
        name = str(meta.get("name"))
        status = as_object(job.get("status"))
        job_phase = phase_of(job)
        if job_phase in LISTED_PHASES:
            lists[LISTED_PHASES[job_phase]].append(name)
        elif job_phase not in KNOWN_UNLISTED:
            unknown.append(name)
        condition: WireObject = {
            "phase": job_phase or None,
            "createTime": meta.get("creationTimestamp"),
        }
        if status.get("runningDuration"):
            condition["runningDuration"] = status["runningDuration"]
        if status.get("taskStatusCount"):
            condition["taskStatusCount"] = status["taskStatusCount"]
        conditions[name] = {k: v for k, v in condition.items() if v is not None}
        entry: WireObject = {
            "name": name,
            "state": job_phase or None,
            "startTimestamp": meta.get("creationTimestamp"),
            "restartCount": int(status.get("retryCount") or 0) or None,
            "runningHistories": _histories(
                entries[position[name]] if name in position else None, job_phase, stamp
            )
            or None,
        }
        created = rfc3339.parse_time(meta.get("creationTimestamp"))
        if created is not None and status.get("runningDuration"):
            with contextlib.suppress(ValueError):
                entry["endTimestamp"] = format_time(
                    created + parse_duration(str(status["runningDuration"]))
                )
        entry = {k: v for k, v in entry.items() if v is not None}
        if name in position:
            entries[position[name]] = entry
        else:
            position[name] = len(entries)
            entries.append(entry)
    status_out: WireObject = {key: names for key, names in lists.items() if names}
    if unknown:
        status_out["unKnowJobs"] = unknown
    if entries:
        status_out["jobStatusList"] = entries
    if conditions:
        status_out["conditions"] = conditions
    status_out["state"] = {"phase": phase}
    return status_out


def plan(
    flow: WireObject,
    templates: Mapping[str, WireObject],
    jobs: list[WireObject],
    outcomes: Mapping[NetworkProbe, ProbeOutcome],
    now: datetime,
) -> FlowPlan:
    """One sync of one JobFlow. `templates` are the namespace's JobTemplates by name, `jobs` the
    Jobs this flow controls, `outcomes` the results of `probes_to_run`."""
    out = FlowPlan()
    flow_name = str(as_object(flow.get("metadata")).get("name") or "")
    state = _classify(flow, jobs, outcomes)
    before = phase_of(flow)
    phase = next_phase(flow, state)
    retain = as_object(flow.get("spec")).get("jobRetainPolicy")
    if phase == FlowPhase.SUCCEED and retain == RetainPolicy.DELETE:
        out.delete = sorted(str(as_object(j.get("metadata")).get("name")) for j in jobs)
        if before == FlowPhase.SUCCEED:
            # As Volcano: the status of the Succeeded flow stays as it was (its Jobs are gone).
            out.status = copy.deepcopy(as_object(flow.get("status")))
            return out
    if phase not in (FlowPhase.SUCCEED, FlowPhase.FAILED):
        for step in state.ready:
            template = templates.get(step)
            if template is None:
                out.events.append(
                    Event(
                        "Warning",
                        "JobTemplateNotFound",
                        f"job {job_name(flow_name, step)} waits for JobTemplate {step}, "
                        "which does not exist",
                    )
                )
                out.requeue_after = RETRY_AFTER
                continue
            out.create.append(build_job(flow, step, template))
        if state.probing:
            out.requeue_after = RETRY_AFTER
    if any(e.reason == "JobTemplateNotFound" for e in out.events):
        # As Volcano: a sync that meets a missing JobTemplate writes no status, so a client that
        # updates the flow it just created (templates not there yet) does not meet a conflict.
        out.status = copy.deepcopy(as_object(flow.get("status")))
        return out
    out.status = flow_status(flow, jobs, phase, now)
    return out


def template_status(template: WireObject, jobs: list[WireObject]) -> WireObject:
    """A JobTemplate's status: the Jobs created from it (`jobDependsOnList`, as Volcano's)."""
    meta = as_object(template.get("metadata"))
    mark = object_string(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    names = sorted(
        str(as_object(j.get("metadata")).get("name"))
        for j in jobs
        if as_object(as_object(j.get("metadata")).get("annotations")).get(CREATED_BY_JOBTEMPLATE)
        == mark
        and as_object(j.get("metadata")).get("namespace") == meta.get("namespace")
    )
    return {"jobDependsOnList": names} if names else {}
