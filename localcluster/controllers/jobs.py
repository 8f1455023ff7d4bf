"""The batch/v1 Job controller: runs each Job's pods to completion, as kube's job controller does.

Non-indexed semantics only (an Indexed Job runs as a non-indexed one): keep
`min(parallelism, completions - succeeded)` pods active, count succeeded and failed pods, and
finish the Job `Complete` once enough pods succeeded or `Failed` once more pods failed than
`backoffLimit` allows or `activeDeadlineSeconds` passed. A suspended Job has its active pods
deleted. A finished Job with `ttlSecondsAfterFinished` is deleted once that has passed.

`decide` and `job_status` decide; `JobController` lists and watches Jobs and pods and carries
the decision out.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from localcluster.controllers.client import ApiClient, ApiError, ClusterAccess, Resource
from localcluster.controllers.workloads.controllers import Cache, _Watched, _WorkloadController
from localcluster.controllers.workloads.objects import (
    PODS,
    as_int,
    meta_of,
    object_key,
    parse_time,
    rfc3339,
    spec_of,
    status_of,
)
from localcluster.controllers.workloads.replicasets import is_active, is_ready, status_patch

logger = logging.getLogger(__name__)

JOBS = Resource("batch", "v1", "jobs", "Job", True, frozenset({"list", "watch", "patch"}))

COMPLETE = "Complete"
FAILED = "Failed"
SUSPENDED = "Suspended"
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
DEADLINE_EXCEEDED = "DeadlineExceeded"


@dataclass(frozen=True)
class PodCounts:
    active: tuple[Mapping[str, Any], ...]
    succeeded: int
    failed: int
    ready: int
    terminating: int


def count_pods(pods: Sequence[Mapping[str, Any]]) -> PodCounts:
    """The Job's pods by state: active (running or pending), succeeded, failed, terminating."""
    active = tuple(p for p in pods if is_active(p))
    phases = [status_of(p).get("phase") for p in pods]
    terminating = sum(
        1
        for p in pods
        if meta_of(p).get("deletionTimestamp")
        and status_of(p).get("phase") not in ("Succeeded", "Failed")
    )
    return PodCounts(
        active=active,
        succeeded=phases.count("Succeeded"),
        failed=phases.count("Failed"),
        ready=sum(1 for p in active if is_ready(p)),
        terminating=terminating,
    )


def finished_condition(job: Mapping[str, Any]) -> str | None:
    """`Complete` or `Failed` once the Job has finished, else None."""
    for condition in status_of(job).get("conditions") or []:
        if condition.get("type") in (COMPLETE, FAILED) and condition.get("status") == "True":
            return str(condition["type"])
    return None


@dataclass
class Decision:
    """What one sync does: pods to create and delete, and the Job's finishing condition."""

    create: int = 0
    delete: list[Mapping[str, Any]] = field(default_factory=list)
    #: (type, reason, message) of a condition to set now: Complete, Failed or Suspended.
    condition: tuple[str, str, str] | None = None


def decide(job: Mapping[str, Any], counts: PodCounts, now: datetime) -> Decision:
    """kube's syncJob for a non-indexed Job, without pod failure policies."""
    spec = spec_of(job)
    if finished_condition(job) is not None:
        return Decision()
    parallelism = as_int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    backoff_limit = as_int(spec.get("backoffLimit"), 6)
    if counts.failed > backoff_limit:
        return Decision(
            delete=list(counts.active),
            condition=(
                FAILED,
                BACKOFF_LIMIT_EXCEEDED,
                "Job has reached the specified backoff limit",
            ),
        )
    started = parse_time(status_of(job).get("startTime"))
    deadline = spec.get("activeDeadlineSeconds")
    if (
        started is not None
        and deadline is not None
        and now >= started + timedelta(seconds=as_int(deadline))
    ):
        return Decision(
            delete=list(counts.active),
            condition=(FAILED, DEADLINE_EXCEEDED, "Job was active longer than specified deadline"),
        )
    if completions is None:
        # Work-queue Job: done once any pod succeeded and the others have stopped.
        done = counts.succeeded > 0 and not counts.active
        # Once one pod succeeded none starts, and the running ones finish on their own.
        wanted = len(counts.active) if counts.succeeded > 0 else parallelism
    else:
        done = counts.succeeded >= as_int(completions)
        wanted = min(parallelism, max(as_int(completions) - counts.succeeded, 0))
    if done:
        return Decision(condition=(COMPLETE, "", ""))
    if spec.get("suspend"):
        return Decision(
            delete=list(counts.active), condition=(SUSPENDED, "JobSuspended", "Job suspended")
        )
    missing = wanted - len(counts.active)
    if missing > 0:
        return Decision(create=missing)
    return Decision(delete=list(counts.active[:-missing]) if missing < 0 else [])


def _condition(kind: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    at = rfc3339(now)
    return {
        "type": kind,
        "status": "True",
        "lastProbeTime": at,
        "lastTransitionTime": at,
        "reason": reason,
        "message": message,
    }


def job_status(
    job: Mapping[str, Any], counts: PodCounts, decision: Decision, now: datetime
) -> dict[str, Any]:
    """The status after `decision`: counters, startTime, and the conditions it sets."""
    old = status_of(job)
    status: dict[str, Any] = {
        k: copy.deepcopy(v) for k, v in old.items() if k not in ("active", "ready")
    }
    suspended = bool(spec_of(job).get("suspend"))
    if not suspended and "startTime" not in status:
        status["startTime"] = rfc3339(now)
    active = len(counts.active) - len(decision.delete) + decision.create
    status["active"] = max(active, 0)
    status["ready"] = counts.ready
    status["succeeded"] = counts.succeeded
    status["failed"] = counts.failed
    status["terminating"] = counts.terminating
    status.setdefault("uncountedTerminatedPods", {})
    # kube omits zero counters.
    for key in ("active", "succeeded", "failed", "terminating"):
        if not status[key]:
            del status[key]
    conditions = [dict(c) for c in old.get("conditions") or []]
    if decision.condition is not None:
        kind, reason, message = decision.condition
        if not any(c.get("type") == kind and c.get("status") == "True" for c in conditions):
            conditions = [c for c in conditions if c.get("type") != kind]
            conditions.append(_condition(kind, reason, message, now))
        if kind == COMPLETE:
            status["completionTime"] = rfc3339(now)
    elif not suspended:
        for condition in conditions:
            if condition.get("type") == SUSPENDED and condition.get("status") == "True":
                condition.update(_condition(SUSPENDED, "JobResumed", "Job resumed", now))
                condition["status"] = "False"
    if conditions:
        status["conditions"] = conditions
    return status


def new_pod(job: Mapping[str, Any]) -> dict[str, Any]:
    """A pod from the Job's template, named `<job>-<random>`, controlled by the Job."""
    meta = meta_of(job)
    template = spec_of(job).get("template") or {}
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "generateName": f"{meta.get('name')}-",
        "namespace": meta.get("namespace"),
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": meta.get("name"),
                "uid": meta.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    for key in ("labels", "annotations", "finalizers"):
        if template_meta.get(key):
            metadata[key] = copy.deepcopy(template_meta[key])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(dict(template.get("spec") or {})),
    }


def ttl_expiry(job: Mapping[str, Any]) -> datetime | None:
    """When a finished Job with `ttlSecondsAfterFinished` is to be deleted, if ever."""
    ttl = spec_of(job).get("ttlSecondsAfterFinished")
    if ttl is None or finished_condition(job) is None:
        return None
    finished = parse_time(status_of(job).get("completionTime"))
    if finished is None:
        transitions = [
            parse_time(c.get("lastTransitionTime"))
            for c in status_of(job).get("conditions") or []
            if c.get("type") in (COMPLETE, FAILED)
        ]
        finished = next((t for t in transitions if t is not None), None)
    return None if finished is None else finished + timedelta(seconds=as_int(ttl))


class JobController(_WorkloadController):
    """Keeps each Job's pods running until it completes or fails; reports them in its status."""

    component = "job-controller"
    kind = "Job"
    api_version = "batch/v1"

    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        self.jobs = Cache()
        self.pods = Cache()
        super().__init__(
            access, stop, [_Watched(JOBS, self.jobs), _Watched(PODS, self.pods, "Job")]
        )

    def sync(self, client: ApiClient, key: str) -> None:
        job = self.jobs.get(key)
        if job is None or meta_of(job).get("deletionTimestamp"):
            return
        now = datetime.now(UTC)
        expiry = ttl_expiry(job)
        if expiry is not None:
            self._expire(client, job, expiry, now)
            return
        uid = str(meta_of(job).get("uid") or "")
        counts = count_pods(self.pods.controlled_by(uid))
        decision = decide(job, counts, now)
        namespace = str(meta_of(job).get("namespace"))
        for _ in range(decision.create):
            created = client.request("POST", PODS.path(namespace), body=new_pod(job))
            self.pods.observe(created)
            self.record(
                client, job, "SuccessfulCreate", f"Created pod: {meta_of(created).get('name')}"
            )
        for pod in decision.delete:
            self._delete_pod(client, job, pod)
        status = job_status(job, counts, decision, now)
        if status != dict(status_of(job)):
            path = JOBS.path(namespace, str(meta_of(job).get("name")))
            try:
                updated = self.merge_patch(
                    client, f"{path}/status", status_patch(status_of(job), status)
                )
            except ApiError as exc:
                if exc.code == 404:
                    return
                raise
            self.jobs.observe(updated)
            if decision.condition is not None and decision.condition[0] == COMPLETE:
                self.record(client, job, "Completed", "Job completed")
            elif decision.condition is not None and decision.condition[0] == FAILED:
                self.record(client, job, decision.condition[1], decision.condition[2])
        deadline = spec_of(job).get("activeDeadlineSeconds")
        started = parse_time(status.get("startTime"))
        if deadline is not None and started is not None and finished_condition(job) is None:
            remaining = (started + timedelta(seconds=as_int(deadline)) - now).total_seconds()
            self.queue.add_after(key, max(remaining, 0.0) + 0.05)

    def _delete_pod(
        self, client: ApiClient, job: Mapping[str, Any], pod: Mapping[str, Any]
    ) -> None:
        name = str(meta_of(pod).get("name"))
        try:
            client.request(
                "DELETE",
                PODS.path(str(meta_of(pod).get("namespace")), name),
                body={
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "preconditions": {"uid": meta_of(pod).get("uid")},
                },
            )
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise
        self.pods.forget(pod)
        self.record(client, job, "SuccessfulDelete", f"Deleted pod: {name}")

    def _expire(
        self, client: ApiClient, job: Mapping[str, Any], expiry: datetime, now: datetime
    ) -> None:
        if now < expiry:
            self.queue.add_after(object_key(job), (expiry - now).total_seconds() + 0.05)
            return
        meta = meta_of(job)
        try:
            client.request(
                "DELETE",
                JOBS.path(str(meta.get("namespace")), str(meta.get("name"))),
                body={
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "propagationPolicy": "Foreground",
                    "preconditions": {"uid": meta.get("uid")},
                },
            )
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise
        logger.info("finished job deleted after its TTL", extra={"job": object_key(job)})
