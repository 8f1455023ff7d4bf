"""The CronJob controller's I/O: informers for CronJobs and Jobs, its own work queue and
workers, and the writes `decide` asks for. It runs inside the `vcjob controller` process and
acts only while that process holds the leader Lease."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ValidationError

from controller.cronjob.decide import Child, Decision, decide, format_time, parse_time
from controller.keyworkers import KeyWorkers
from controller.objectstore import Informer, key_of
from kubeio.client import JOBS, Resource
from kubeio.clock import Clock, RealClock
from kubeio.errors import AlreadyExistsError, KubeError, NotFoundError
from kubeio.events import EventRecorder
from kubeio.informer import SharedWatches
from kubeio.kubelike import KubeLike
from shared import labels
from shared.models.cronjob import CRONJOB_KIND, CronJob
from shared.wire import (
    WireObject,
    creation_timestamp,
    deletion_timestamp,
    job_state,
    metadata,
    name_of,
    namespace_of,
    owner_references,
    uid_of,
)

log = logging.getLogger(__name__)

CRONJOBS: Final = Resource(labels.BATCH_GROUP, labels.BATCH_VERSION, "cronjobs", CRONJOB_KIND)
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def local_zone() -> tzinfo:
    """The process's local zone as an IANA zone (for CronJobs without `timeZone`): `TZ`, then
    the /etc/localtime link, else UTC."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    try:
        target = str(Path("/etc/localtime").resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        if name:
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return UTC


def controller_of(job: WireObject) -> dict[str, Any] | None:
    """The Job's controller reference when it is a CronJob."""
    for ref in owner_references(job):
        if ref.get("controller") and ref.get("kind") == CRONJOB_KIND:
            return dict(ref)
    return None


def child_of(job: WireObject) -> Child:
    state = job_state(job)
    created = parse_time(creation_timestamp(job))
    return Child(
        name=name_of(job),
        uid=uid_of(job),
        phase=str(state.get("phase") or "Pending"),
        created=created or EPOCH,
        transition=parse_time(state.get("lastTransitionTime")),
    )


class CronJobController(KeyWorkers):
    thread_prefix = "cronjob"

    def __init__(
        self,
        kube: KubeLike,
        recorder: EventRecorder,
        is_leader: Callable[[], bool],
        *,
        clock: Clock | None = None,
        workers: int = 2,
        default_zone: tzinfo | None = None,
        watches: SharedWatches | None = None,
    ) -> None:
        # The work queue runs on real time; `clock` only says what time it is for the schedule.
        super().__init__(is_leader, workers, watches)
        self.kube = kube
        self.recorder = recorder
        self.clock: Clock = clock or RealClock()
        self.default_zone = default_zone or local_zone()
        self.cronjobs = self._informer(kube, CRONJOBS, self._on_cronjob)
        # Only the Jobs a CronJob controls: not a second copy of every Job.
        self.jobs = self._informer(
            kube, JOBS, self._on_job, keep=lambda job: controller_of(job) is not None
        )

    # --- events -> keys --------------------------------------------------------------------

    def _on_cronjob(self, old: WireObject | None, new: WireObject | None) -> None:
        self.queue.add(key_of(new or old or {}))

    def _on_job(self, old: WireObject | None, new: WireObject | None) -> None:
        for job in (old, new):
            ref = controller_of(job) if job else None
            if job is not None and ref is not None:
                namespace = namespace_of(job)
                self.queue.add(f"{namespace}/{ref.get('name')}")

    # --- KeyWorkers ------------------------------------------------------------------------

    def informers(self) -> list[Informer]:
        return [self.cronjobs, self.jobs]

    def resync_keys(self) -> Iterable[str]:
        return [key_of(cron) for cron in self.cronjobs.items()]

    def handle(self, key: str) -> float | None:
        requeue = self.sync(key)
        return None if requeue is None else requeue.total_seconds()

    def failed(self, key: str, exc: Exception) -> None:
        self.queue.add_rate_limited(key)
        if isinstance(exc, KubeError):
            log.warning("cronjob sync failed", extra={"cronjob": key, "error": str(exc)})
        else:
            log.exception("cronjob sync crashed", extra={"cronjob": key})

    def healthy(self) -> bool:
        return self.cronjobs.alive() and self.jobs.alive()

    # --- one sync --------------------------------------------------------------------------

    def children(self, cron: WireObject) -> list[Child]:
        meta = metadata(cron)
        uid, namespace = meta.get("uid"), meta.get("namespace")
        out = []
        for job in self.jobs.items():
            ref = controller_of(job)
            if (
                ref is not None
                and ref.get("uid") == uid
                and metadata(job).get("namespace") == namespace
            ):
                out.append(child_of(job))
        return out

    def sync(self, key: str) -> timedelta | None:
        raw = self.cronjobs.get(key)
        if raw is None or deletion_timestamp(raw):
            return None
        raw.setdefault("kind", CRONJOB_KIND)
        raw.setdefault("apiVersion", labels.BATCH_API_VERSION)
        try:
            cron = CronJob.from_wire(raw)
        except ValidationError as exc:
            self.recorder.record(raw, "Warning", "InvalidCronJob", str(exc)[:1024])
            return None
        decision = decide(cron, self.children(raw), self.clock.now(), self.default_zone)
        for event in decision.events:
            self.recorder.record(raw, event.type, event.reason, event.message)
        failure: KubeError | None = None
        try:
            self._delete(raw, decision)
            self._create(raw, cron, decision)
        except KubeError as exc:
            failure = exc
        self._write_status(raw, decision)
        if failure is not None:
            raise failure
        return decision.requeue_after

    def _delete(self, raw: WireObject, decision: Decision) -> None:
        namespace = raw["metadata"]["namespace"]
        for name, why in decision.delete:
            try:
                self.kube.delete(JOBS, namespace, name, propagation="Background")
            except KubeError as exc:
                self.recorder.record(raw, "Warning", "FailedDelete", f"Deleted job {name}: {exc}")
                raise
            self.recorder.record(raw, "Normal", "SuccessfulDelete", f"Deleted job {name} ({why})")

    def _create(self, raw: WireObject, cron: CronJob, decision: Decision) -> None:
        job = decision.create
        if job is None:
            return
        namespace = cron.namespace
        name = job["metadata"]["name"]
        try:
            created = self.kube.create(JOBS, namespace, job)
        except AlreadyExistsError:
            existing = self.kube.get(JOBS, namespace, name)
            ref = controller_of(existing)
            if ref is None or ref.get("uid") != cron.uid:
                self.recorder.record(
                    raw, "Warning", "ForeignJob", f"job {name} exists and is not controlled by us"
                )
                return
            if not child_of(existing).finished:
                self._remember(decision, existing)
            return
        except NotFoundError as exc:
            self.recorder.record(raw, "Warning", "NamespaceTerminating", str(exc))
            raise
        except KubeError as exc:
            self.recorder.record(raw, "Warning", "FailedCreate", f"Error creating job: {exc}")
            # Not scheduled after all: the slot is tried again.
            decision.last_schedule_time = parse_time(
                cron.status.last_schedule_time if cron.status else None
            )
            raise
        created.setdefault("kind", labels.JOB_KIND)
        self.jobs.put(created)
        self._remember(decision, created)
        self.recorder.record(raw, "Normal", "SuccessfulCreate", f"Created job {name}")

    @staticmethod
    def _remember(decision: Decision, job: WireObject) -> None:
        meta = job["metadata"]
        if any(r.get("uid") == meta.get("uid") for r in decision.active):
            return
        decision.active.append(
            {
                "apiVersion": labels.BATCH_API_VERSION,
                "kind": labels.JOB_KIND,
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
                "resourceVersion": meta.get("resourceVersion"),
            }
        )

    def _write_status(self, raw: WireObject, decision: Decision) -> None:
        current = raw.get("status") or {}
        wanted: dict[str, Any] = {
            "active": decision.active or None,
            "lastScheduleTime": (
                format_time(decision.last_schedule_time) if decision.last_schedule_time else None
            ),
            "lastSuccessfulTime": (
                format_time(decision.last_successful_time)
                if decision.last_successful_time
                else None
            ),
        }
        if _same_status(current, wanted):
            return
        meta = raw["metadata"]
        try:
            written = self.kube.merge_patch(
                CRONJOBS, meta["namespace"], meta["name"], {"status": wanted}, sub="status"
            )
        except NotFoundError:
            return
        self.cronjobs.put(written)


def _same_status(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    def names(refs: Any) -> list[tuple[str, str]]:
        return [(str(r.get("name")), str(r.get("uid"))) for r in refs or []]

    if names(current.get("active")) != names(wanted.get("active")):
        return False
    return all(
        parse_time(current.get(k)) == parse_time(wanted.get(k))
        for k in ("lastScheduleTime", "lastSuccessfulTime")
    )
