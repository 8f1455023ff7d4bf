"""The batch/v1 CronJob controller: starts a Job at each scheduled time, as kube's does.

At the most recent scheduled time not yet started (missed ones are not caught up, and one older
than `startingDeadlineSeconds` is skipped) a Job named `<cronjob>-<minutes since the epoch>` is
created from `jobTemplate`, unless the CronJob is suspended or `concurrencyPolicy: Forbid` finds
one still running (`Replace` deletes the running ones first). Finished Jobs beyond
`successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted, oldest first. Schedules are
read in UTC.

`plan` decides; `CronJobController` lists and watches CronJobs and Jobs and carries it out.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from localcluster.apiserver import cron
from localcluster.controllers.client import ApiClient, ApiError, ClusterAccess, Resource
from localcluster.controllers.jobs import COMPLETE, JOBS, finished_condition
from localcluster.controllers.workloads.controllers import Cache, _Watched, _WorkloadController
from localcluster.controllers.workloads.objects import (
    as_int,
    created_order,
    meta_of,
    object_key,
    parse_time,
    rfc3339,
    spec_of,
    status_of,
)
from localcluster.controllers.workloads.replicasets import status_patch

logger = logging.getLogger(__name__)

CRONJOBS = Resource("batch", "v1", "cronjobs", "CronJob", True, frozenset({"list", "watch"}))
SCHEDULED_AT = "batch.kubernetes.io/cronjob-scheduled-timestamp"


@dataclass
class CronPlan:
    """One sync's work: the Job to create (if any), Jobs to delete, the status to write, and
    how long until the next scheduled time."""

    create: dict[str, Any] | None = None
    delete: list[Mapping[str, Any]] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    wake_in: float | None = None


def job_for(cronjob: Mapping[str, Any], scheduled: datetime) -> dict[str, Any]:
    """The Job started at `scheduled`: named after the minute, controlled by the CronJob."""
    meta = meta_of(cronjob)
    template = spec_of(cronjob).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = {**(template_meta.get("annotations") or {}), SCHEDULED_AT: rfc3339(scheduled)}
    metadata: dict[str, Any] = {
        "name": f"{meta.get('name')}-{int(scheduled.timestamp()) // 60}",
        "namespace": meta.get("namespace"),
        "annotations": annotations,
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "name": meta.get("name"),
                "uid": meta.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if template_meta.get("labels"):
        metadata["labels"] = copy.deepcopy(template_meta["labels"])
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": copy.deepcopy(dict(template.get("spec") or {})),
    }


def _reference(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = meta_of(job)
    return {
        "kind": "Job",
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": "batch/v1",
        "resourceVersion": meta.get("resourceVersion"),
    }


def _history_to_delete(jobs: Sequence[Mapping[str, Any]], kind: str, keep: int) -> list[Any]:
    finished = sorted(
        (
            j
            for j in jobs
            if finished_condition(j) == kind and not meta_of(j).get("deletionTimestamp")
        ),
        key=created_order,
    )
    return finished[: max(len(finished) - keep, 0)]


def plan(cronjob: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]], now: datetime) -> CronPlan:
    """kube's syncCronJob for one CronJob and the Jobs it controls."""
    spec = spec_of(cronjob)
    status = {k: copy.deepcopy(v) for k, v in status_of(cronjob).items()}
    result = CronPlan()
    try:
        schedule = cron.parse(str(spec.get("schedule") or ""))
    except ValueError:
        return result  # validation keeps these out; one written before is left alone
    active = [
        j for j in jobs if finished_condition(j) is None and not meta_of(j).get("deletionTimestamp")
    ]
    last = parse_time(status.get("lastScheduleTime")) or parse_time(
        meta_of(cronjob).get("creationTimestamp")
    )
    scheduled, _ = cron.most_recent(schedule, last or now, now)
    deadline = spec.get("startingDeadlineSeconds")
    too_late = (
        scheduled is not None
        and deadline is not None
        and scheduled < now - timedelta(seconds=as_int(deadline))
    )
    policy = spec.get("concurrencyPolicy") or "Allow"
    if scheduled is not None and not spec.get("suspend") and not too_late:
        if policy == "Forbid" and active:
            scheduled = None  # try again at the next resync, as kube requeues
        else:
            if policy == "Replace":
                result.delete.extend(active)
                active = []
            result.create = job_for(cronjob, scheduled)
            status["lastScheduleTime"] = rfc3339(scheduled)
    elif scheduled is not None:
        status["lastScheduleTime"] = rfc3339(scheduled)
    result.delete.extend(
        _history_to_delete(jobs, COMPLETE, as_int(spec.get("successfulJobsHistoryLimit"), 3))
    )
    result.delete.extend(
        _history_to_delete(jobs, "Failed", as_int(spec.get("failedJobsHistoryLimit"), 1))
    )
    references = [_reference(j) for j in active]
    if references:
        status["active"] = references
    else:
        status.pop("active", None)
    successes = [
        parse_time(status_of(j).get("completionTime"))
        for j in jobs
        if finished_condition(j) == COMPLETE
    ]
    latest_success = max((t for t in successes if t is not None), default=None)
    if latest_success is not None:
        status["lastSuccessfulTime"] = rfc3339(latest_success)
    result.status = status
    upcoming = cron.next_time(schedule, now)
    if upcoming is not None:
        result.wake_in = (upcoming - now).total_seconds()
    return result


class CronJobController(_WorkloadController):
    """Starts each CronJob's Jobs on schedule and keeps its history within its limits."""

    component = "cronjob-controller"
    kind = "CronJob"
    api_version = "batch/v1"

    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        self.cronjobs = Cache()
        self.jobs = Cache()
        super().__init__(
            access, stop, [_Watched(CRONJOBS, self.cronjobs), _Watched(JOBS, self.jobs, "CronJob")]
        )

    def sync(self, client: ApiClient, key: str) -> None:
        cronjob = self.cronjobs.get(key)
        if cronjob is None or meta_of(cronjob).get("deletionTimestamp"):
            return
        now = datetime.now(UTC)
        uid = str(meta_of(cronjob).get("uid") or "")
        decision = plan(cronjob, self.jobs.controlled_by(uid), now)
        namespace = str(meta_of(cronjob).get("namespace"))
        for job in decision.delete:
            self._delete(client, cronjob, job)
        status = decision.status
        if decision.create is not None:
            try:
                created = client.request("POST", JOBS.path(namespace), body=decision.create)
            except ApiError as exc:
                if exc.code != 409:  # already started at this time
                    raise
            else:
                self.jobs.observe(created)
                status.setdefault("active", []).append(_reference(created))
                name = meta_of(created).get("name")
                logger.info("job started", extra={"cronjob": key, "job": name})
                self.record(client, cronjob, "SuccessfulCreate", f"Created job {name}")
        if status != dict(status_of(cronjob)):
            path = CRONJOBS.path(namespace, str(meta_of(cronjob).get("name")))
            try:
                updated = self.merge_patch(
                    client, f"{path}/status", status_patch(status_of(cronjob), status)
                )
            except ApiError as exc:
                if exc.code == 404:
                    return
                raise
            self.cronjobs.observe(updated)
        if decision.wake_in is not None:
            self.queue.add_after(key, decision.wake_in + 0.05)

    def _delete(
        self, client: ApiClient, cronjob: Mapping[str, Any], job: Mapping[str, Any]
    ) -> None:
        meta = meta_of(job)
        try:
            client.request(
                "DELETE",
                JOBS.path(str(meta.get("namespace")), str(meta.get("name"))),
                body={
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "propagationPolicy": "Background",
                    "preconditions": {"uid": meta.get("uid")},
                },
            )
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise
        self.jobs.forget(job)
        logger.info("job deleted", extra={"cronjob": object_key(cronjob), "job": meta.get("name")})
        self.record(client, cronjob, "SuccessfulDelete", f"Deleted job {meta.get('name')}")
