"""The CronJob controller's I/O: informers for CronJobs and Jobs, its own work queue and
workers, and the writes `decide` asks for. It runs inside the `vcjob controller` process and
acts only while that process holds the leader Lease."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ValidationError

from controller.cronjob.decide import Child, Decision, decide, format_time, parse_time
from controller.cronjob.informer import Informer, WireObject, key_of
from kubeio.client import JOBS, Kube, Resource
from kubeio.clock import Clock, RealClock
from kubeio.errors import AlreadyExistsError, KubeError, NotFoundError
from kubeio.events import EventRecorder
from kubeio.workqueue import WorkQueue
from shared import labels
from shared.models.cronjob import CRONJOB_KIND, CronJob

log = logging.getLogger(__name__)

CRONJOBS: Final = Resource(labels.BATCH_GROUP, labels.BATCH_VERSION, "cronjobs", CRONJOB_KIND)
RESYNC_SECONDS: Final = 30.0
NOT_LEADER_RETRY_SECONDS: Final = 5.0
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
    for ref in (job.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == CRONJOB_KIND:
            return dict(ref)
    return None


def child_of(job: WireObject) -> Child:
    meta = job.get("metadata") or {}
    state = (job.get("status") or {}).get("state") or {}
    created = parse_time(meta.get("creationTimestamp"))
    return Child(
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        phase=str(state.get("phase") or "Pending"),
        created=created or EPOCH,
        transition=parse_time(state.get("lastTransitionTime")),
    )


class CronJobController:
    def __init__(
        self,
        kube: Kube,
        recorder: EventRecorder,
        is_leader: Callable[[], bool],
        *,
        clock: Clock | None = None,
        workers: int = 2,
        default_zone: tzinfo | None = None,
    ) -> None:
        self.kube = kube
        self.recorder = recorder
        self.is_leader = is_leader
        self.clock: Clock = clock or RealClock()
        self.default_zone = default_zone or local_zone()
        # The work queue runs on real time; `clock` only says what time it is for the schedule.
        self.queue = WorkQueue()
        self._workers = workers
        self._stop = threading.Event()
        self.cronjobs = Informer(kube, CRONJOBS, self._on_cronjob, self._stop)
        self.jobs = Informer(kube, JOBS, self._on_job, self._stop)
        self._threads: list[threading.Thread] = []

    # --- events -> keys --------------------------------------------------------------------

    def _on_cronjob(self, old: WireObject | None, new: WireObject | None) -> None:
        self.queue.add(key_of(new or old or {}))

    def _on_job(self, old: WireObject | None, new: WireObject | None) -> None:
        for job in (old, new):
            ref = controller_of(job) if job else None
            if job is not None and ref is not None:
                namespace = (job.get("metadata") or {}).get("namespace") or ""
                self.queue.add(f"{namespace}/{ref.get('name')}")

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self.cronjobs.start()
        self.jobs.start()
        for i in range(self._workers):
            self._spawn(f"cronjob-worker-{i}", self._work)
        self._spawn("cronjob-resync", self._resync)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def shutdown(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self.queue.shutdown(drain=False)
        for thread in self._threads:
            thread.join(timeout)

    def healthy(self) -> bool:
        return self.cronjobs.alive() and self.jobs.alive()

    def _resync(self) -> None:
        # A lost timed requeue (or a leadership change) is repaired within this period.
        while not self._stop.wait(RESYNC_SECONDS):
            for cron in self.cronjobs.items():
                self.queue.add(key_of(cron))

    def _work(self) -> None:
        while not (self.cronjobs.synced and self.jobs.synced):
            if self._stop.wait(0.05):
                return
        while True:
            key = self.queue.get(timeout=0.5)
            if key is None:
                if self.queue.shutting_down:
                    return
                continue
            try:
                if not self.is_leader():
                    self.queue.add_after(key, NOT_LEADER_RETRY_SECONDS)
                    continue
                requeue = self.sync(key)
                self.queue.forget(key)
                if requeue is not None:
                    self.queue.add_after(key, max(0.0, requeue.total_seconds()))
            except Exception as exc:
                self.queue.add_rate_limited(key)
                if isinstance(exc, KubeError):
                    log.warning("cronjob sync failed", extra={"cronjob": key, "error": str(exc)})
                else:
                    log.exception("cronjob sync crashed", extra={"cronjob": key})
            finally:
                self.queue.done(key)

    # --- one sync --------------------------------------------------------------------------

    def children(self, cron: WireObject) -> list[Child]:
        meta = cron.get("metadata") or {}
        uid = meta.get("uid")
        namespace = meta.get("namespace")
        out = []
        for job in self.jobs.items():
            ref = controller_of(job)
            if (
                ref is not None
                and ref.get("uid") == uid
                and (job.get("metadata") or {}).get("namespace") == namespace
            ):
                out.append(child_of(job))
        return out

    def sync(self, key: str) -> timedelta | None:
        raw = self.cronjobs.get(key)
        if raw is None or (raw.get("metadata") or {}).get("deletionTimestamp"):
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
