"""Execute a `Plan` against the API, in the contract's order.

annotate out-of-sync → delete → create (PodGroup/PVCs/plugin objects, then pods, guarded by a
fresh read of the Job) → update → job spec patch → ONE status write → events → consumed
Commands deleted → the job itself deleted for its TTL. Every object a write returns goes into
the cache (read-your-writes). The first failure is raised after the independent operations of
its step were attempted; the status is then not written and the job is re-planned.

A plan that creates objects and writes the status (a new job's first plan, pods recreated
with new counts) writes the status and its events first instead (`status_guards_creates`):
the write carries the cached Job's resourceVersion and UID, so it succeeds only if the Job
still exists unchanged — not deleted, replaced or being deleted, each of which changes the
resourceVersion — which is difference 2's guarantee without a read of its own. The counts it writes
already include the pods the plan creates, so nothing is written again once they exist.
"""

from __future__ import annotations

import copy
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from controller.job.decide import effectorder, prunedfields
from controller.job.decide.model import ObjectRef, Plan
from controller.job.shell.cache import Cache
from controller.metrics import Metrics
from controller.settings import CREATE_PARALLELISM
from controller.volcanometrics import job_to_pod_latency_ms
from kubeio.client import COMMANDS, JOBS, WORKLOADS, resource_for, resource_for_kind
from kubeio.errors import (
    AlreadyExistsError,
    ConflictError,
    KubeError,
    NotFoundError,
    PartialProgressError,
    PermanentError,
)
from kubeio.events import EventRecorder
from kubeio.kubelike import KubeLike
from shared.labels import OUT_OF_SYNC_KEY
from shared.objectkeys import object_key
from shared.wire import WireObject, metadata, phase_of, spec_of, state_phase

log = logging.getLogger(__name__)


class JobGoneError(Exception):
    """The Job was deleted or replaced while its plan was being applied."""


@dataclass
class ApplyResult:
    job: WireObject
    status_written: bool
    # Objects created, deleted or annotated: their watch echoes are not reconciled, so the
    # runner reconciles once more to see the world its writes made.
    objects_written: int = 0


def _meta(obj: WireObject) -> WireObject:
    meta: WireObject = obj.setdefault("metadata", {})
    return meta


class _Progress:
    """Writes that succeeded during one apply (pods are created from several threads)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.count += 1


class Applier:
    def __init__(
        self,
        kube: KubeLike,
        cache: Cache,
        recorder: EventRecorder,
        metrics: Metrics,
        executor: ThreadPoolExecutor | None = None,
    ) -> None:
        self._kube = kube
        self._cache = cache
        self._recorder = recorder
        self._metrics = metrics
        self._pruned_reported = False
        self._executor = executor or ThreadPoolExecutor(
            CREATE_PARALLELISM, thread_name_prefix="create"
        )

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    def apply(self, job: WireObject, plan: Plan) -> ApplyResult:
        progress = _Progress()
        try:
            return self._apply(job, plan, progress)
        except KubeError as exc:
            permanent = isinstance(exc, PermanentError)
            if progress.count and not permanent and not isinstance(exc, PartialProgressError):
                raise PartialProgressError(exc, progress.count) from exc
            raise

    def _apply(self, job: WireObject, plan: Plan, progress: _Progress) -> ApplyResult:
        namespace = str(job["metadata"]["namespace"])
        self._annotate(plan.annotate_out_of_sync, job, progress)
        self._delete(plan.delete, job, progress)
        before_creates, after_creates = effectorder.updates_around_creates(plan.update)
        self._update(before_creates, job, namespace)
        written = False
        if plan.status is not None and status_guards_creates(job, plan):
            job = self._write_status(job, plan.status, guard=True)
            written = True
            self._record(job, plan)
            self._create(plan.create, job, namespace, None, progress, proven_alive=True)
        else:
            self._create(plan.create, job, namespace, plan.guard_uid, progress)
        self._update(after_creates, job, namespace)
        if plan.job_spec_patch:
            job = self._kube.merge_patch(
                JOBS, namespace, job["metadata"]["name"], plan.job_spec_patch
            )
            job.setdefault("kind", "Job")
            self._cache.store_written("Job", job)
        workload_status = plan.workload_status
        if plan.adopt_workload is not None:
            adopted = self._adopt_workload(plan.adopt_workload)
            if adopted is None:
                workload_status = None  # gone meanwhile
            elif workload_status is not None:
                # The status was planned on the Workload as read: written over the adopted one.
                workload_status = {**workload_status, "metadata": adopted["metadata"]}
        if workload_status is not None:
            self._write_workload_status(workload_status)
        if not written:
            if plan.status is not None:
                job = self._write_status(job, plan.status)
                written = True
            self._record(job, plan)
        for command in plan.delete_commands:
            self._kube.delete(COMMANDS, namespace, command)
            self._cache.forget_deleted("Command", namespace, command)
        if plan.delete_job:
            self._kube.delete(
                JOBS,
                namespace,
                job["metadata"]["name"],
                uid=job["metadata"].get("uid"),
                propagation="Foreground",
            )
            log.info("job deleted after its TTL", extra={"job": _key(job)})
        return ApplyResult(job=job, status_written=written, objects_written=progress.count)

    def _record(self, job: WireObject, plan: Plan) -> None:
        for event in plan.events:
            self._recorder.record(job, event.type, event.reason, event.message)

    # --- steps -------------------------------------------------------------------------------

    def _annotate(self, refs: list[ObjectRef], job: WireObject, progress: _Progress) -> None:
        patch = {"metadata": {"annotations": {OUT_OF_SYNC_KEY: "true"}}}
        for ref in refs:
            try:
                result = self._kube.merge_patch(
                    resource_for_kind(ref.kind, ref.api_version), ref.namespace, ref.name, patch
                )
            except NotFoundError:
                continue
            progress.add()
            result.setdefault("kind", ref.kind)
            self._cache.store_written(
                resource_for_kind(ref.kind, ref.api_version).cache_kind, result
            )

    def _delete(self, refs: list[ObjectRef], job: WireObject, progress: _Progress) -> None:
        failure: KubeError | None = None
        for ref in refs:
            try:
                lingering = self._kube.delete(
                    resource_for_kind(ref.kind, ref.api_version),
                    ref.namespace,
                    ref.name,
                    uid=ref.uid,
                )
            except ConflictError as conflict:
                if not self._replaced(ref):
                    # The object we meant is still there: the delete did not happen.
                    failure = failure or conflict
                continue
            except KubeError as exc:
                failure = failure or exc
                self._recorder.record(
                    job, "Warning", f"FailedDelete{ref.kind}", f"delete {ref.name}: {exc.reason}"
                )
                continue
            progress.add()
            if ref.kind == "Pod":
                self._metrics.pod_deletes.inc()
            if lingering is not None:
                lingering.setdefault("kind", ref.kind)
                self._cache.store_written(
                    resource_for_kind(ref.kind, ref.api_version).cache_kind, lingering
                )
            elif ref.kind != "Pod":
                # Read-your-deletes: the object is gone (or was already). An unwatched kind
                # (Secrets) has no watch to say so, and the next round would delete it again.
                # Pods wait for their watch, which records why they went (a PodEdge).
                self._cache.forget_deleted(
                    resource_for_kind(ref.kind, ref.api_version).cache_kind, ref.namespace, ref.name
                )
        if failure is not None:
            raise failure

    def _replaced(self, ref: ObjectRef) -> bool:
        """After a 409 on a delete with a UID precondition: True when the name is free or now
        holds another object (ours is gone, the delete is done)."""
        current = self._kube.get_or_none(
            resource_for_kind(ref.kind, ref.api_version), ref.namespace, ref.name
        )
        if current is None:
            return True
        return ref.uid is not None and _meta(current).get("uid") != ref.uid

    def _create(
        self,
        objects: list[WireObject],
        job: WireObject,
        namespace: str,
        guard_uid: str | None,
        progress: _Progress,
        *,
        proven_alive: bool = False,
    ) -> None:
        """`proven_alive`: the status write just before stood for difference 2's check."""
        if not objects:
            return
        if not proven_alive:
            self._check_job_alive(job, guard_uid or job["metadata"].get("uid"))
        others = effectorder.creates_in_order(o for o in objects if o.get("kind") != "Pod")
        pods = [o for o in objects if o.get("kind") == "Pod"]
        failure: KubeError | None = None
        for obj in others:
            failure = self._create_one(obj, job, namespace, progress) or failure
        if failure is not None:
            raise failure
        if not pods:
            return
        results = self._executor.map(lambda o: self._create_one(o, job, namespace, progress), pods)
        failures = [r for r in results if r is not None]
        if failures:
            raise failures[0]

    def _create_one(
        self, obj: WireObject, job: WireObject, namespace: str, progress: _Progress
    ) -> KubeError | None:
        kind = str(obj.get("kind"))
        resource = resource_for(obj)
        ns = str(_meta(obj).get("namespace") or namespace)
        try:
            created = self._kube.create(resource, ns, obj)
        except AlreadyExistsError:
            if kind == "Secret":
                # Secrets are not watched (the controller may not read them): the one that
                # exists is remembered without its data, so it is deleted by name when the job
                # finishes and never rewritten with keys other than those it holds.
                self._cache.store_written(kind, {k: v for k, v in obj.items() if k != "data"})
            return None  # deterministic names: somebody (maybe we, before a restart) made it
        except KubeError as exc:
            self._recorder.record(
                job,
                "Warning",
                f"FailedCreate{kind}",
                f"create {_meta(obj).get('name')}: {exc.reason or exc.status}",
            )
            return exc
        progress.add()
        created.setdefault("kind", kind)
        self._cache.store_written(resource.cache_kind, created)
        if kind == "Pod":
            self._metrics.pod_creates.inc()
            latency = job_to_pod_latency_ms(job, created)
            if latency is not None:
                self._metrics.job_to_pod_latency.observe(latency)
        return None

    def _check_job_alive(self, job: WireObject, uid: str | None) -> None:
        """Never create anything for a Job that is gone, replaced or being deleted (difference 2
        in docs/differences-from-volcano.md)."""
        meta = job["metadata"]
        fresh = self._kube.get_or_none(JOBS, meta["namespace"], meta["name"])
        gone = job_gone_reason(job, fresh, uid)
        if gone is not None:
            raise JobGoneError(gone)

    def _update(self, objects: list[WireObject], job: WireObject, namespace: str) -> None:
        for obj in objects:
            kind = str(obj.get("kind"))
            res = resource_for(obj)
            ns = str(_meta(obj).get("namespace") or namespace)
            try:
                result = self._kube.replace(res, ns, obj)
            except NotFoundError:
                result = self._kube.create(res, ns, obj)
            result.setdefault("kind", kind)
            self._cache.store_written(res.cache_kind, result)

    def _adopt_workload(self, workload: WireObject) -> WireObject | None:
        """A prebuilt Workload made ours, with the resourceVersion it was read at: a 409 re-plans
        from the fresh copy; one deleted meanwhile is not made again (None)."""
        namespace = str(_meta(workload).get("namespace"))
        try:
            written = self._kube.replace(WORKLOADS, namespace, workload)
        except NotFoundError:
            return None
        written.setdefault("kind", WORKLOADS.kind)
        self._cache.store_written(WORKLOADS.kind, written)
        return written

    def _write_workload_status(self, workload: WireObject) -> None:
        """Kueue's Workload status (Finished, or an eviction carried out), with the
        resourceVersion it was read at: a 409 re-plans from the fresh copy the watch brings."""
        namespace = str(_meta(workload).get("namespace"))
        try:
            written = self._kube.replace_status(WORKLOADS, namespace, workload)
        except NotFoundError:
            return
        written.setdefault("kind", WORKLOADS.kind)
        self._cache.store_written(WORKLOADS.kind, written)

    def _write_status(self, job: WireObject, status: WireObject, guard: bool = False) -> WireObject:
        """The status PUT with the cached resourceVersion. With `guard`, the write stands for
        difference 2's check: a Job that is gone, replaced or being deleted raises JobGoneError."""
        body = copy.copy(job)
        body["status"] = status
        meta = job["metadata"]
        old_phase = phase_of(job)
        try:
            written = self._kube.replace_status(JOBS, meta["namespace"], body)
        except NotFoundError:
            if guard:
                raise JobGoneError(f"job {_key(job)} no longer exists") from None
            raise
        except ConflictError:
            # Somebody wrote the job since we read it: refresh the cache, then re-plan.
            fresh = self._kube.get_or_none(JOBS, meta["namespace"], meta["name"])
            if fresh is not None:
                fresh.setdefault("kind", "Job")
                self._cache.store_written("Job", fresh)
            gone = job_gone_reason(job, fresh, meta.get("uid")) if guard else None
            if gone is not None:
                raise JobGoneError(gone) from None
            raise
        written.setdefault("kind", "Job")
        self._cache.store_written("Job", written)
        self._note_pruned(status, written)
        new_phase = state_phase(status)
        if new_phase and new_phase != old_phase:
            self._metrics.phase_transitions.labels(phase=new_phase).inc()
            queue = str(spec_of(job).get("queue") or "")
            self._metrics.volcano_jobs.entered(_key(job), queue, new_phase)
            log.info(
                "job phase changed",
                extra={"job": _key(job), "phase": new_phase, "from_phase": old_phase},
            )
        return written

    def _note_pruned(self, sent: WireObject, written: WireObject) -> None:
        """Once per process: the Job CRD dropped vcjob's own status fields."""
        if self._pruned_reported:
            return
        fields = prunedfields.pruned(sent, written.get("status"))
        if fields:
            self._pruned_reported = True
            self._metrics.pruned_status_fields.set(len(fields))
            log.warning(prunedfields.warning(fields), extra={"job": _key(written)})


def status_guards_creates(job: WireObject, plan: Plan) -> bool:
    """Whether the plan's status write goes before its creates and stands for difference 2's read of
    the Job: when it writes a status, creates something, and the Job it writes is the one the
    plan guards (a spec patch, which changes the Job first, keeps the old order)."""
    uid = job["metadata"].get("uid")
    return (
        plan.status is not None
        and bool(plan.create)
        and not plan.job_spec_patch
        and bool(uid)
        and plan.guard_uid in (None, uid)
    )


def job_gone_reason(job: WireObject, fresh: WireObject | None, uid: str | None) -> str | None:
    """Why nothing may be created for `job` given its `fresh` copy from the API (None: gone),
    or None when it is the same Job and not being deleted."""
    if fresh is None:
        return f"job {_key(job)} no longer exists"
    fresh_meta = metadata(fresh)
    if fresh_meta.get("uid") != uid:
        return f"job {_key(job)} was replaced (uid {fresh_meta.get('uid')})"
    if fresh_meta.get("deletionTimestamp"):
        return f"job {_key(job)} is being deleted"
    return None


_key = object_key
