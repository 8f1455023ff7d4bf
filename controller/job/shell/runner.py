"""The Job controller's wiring: watches → cache → work queue → N workers (observe → reconcile →
apply), resync, its health, and an orderly shutdown. The process around it (client pool, metrics
registry, events, leader election, endpoints) is `controller.manager`'s.

Transient errors and conflicts are retried with capped backoff forever and never fail a job
(difference 1); after repeated failures the job gets a Warning event and `state.message` names what
keeps failing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from controller.job.decide import foreignwriters, kueue, multikueue, resync
from controller.job.decide.followup import follow_up_needed
from controller.job.decide.model import Observed, Plan, PlanSettings
from controller.job.decide.plan import reconcile as plan_reconcile
from controller.job.decide.plugins.ssh import needs_generated_key
from controller.job.decide.suspension import managed_by_other
from controller.job.shell.apply import Applier, JobGoneError
from controller.job.shell.batching import BatchingStore
from controller.job.shell.cache import QUEUE, WORKLOAD, Cache, JobView
from controller.job.shell.failures import FailureReports
from controller.job.shell.foreignwatch import ForeignWriterWatch
from controller.job.shell.observe import build_observed, pvcs_to_look_up, waits_for_admission
from controller.job.shell.phasewatch import JobPhaseStore
from controller.job.shell.queuewatch import QueueStore
from controller.job.shell.sshkeys import generate_key_pair
from controller.metrics import CONTROLLER, Metrics
from controller.settings import Settings
from kubeio.client import (
    COMMANDS,
    CONFIGMAPS,
    JOBS,
    NATIVE_COMPOSITE_PODGROUPS,
    NATIVE_PODGROUPS,
    NETWORK_POLICIES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    PVCS,
    QUEUES,
    RESOURCE_FLAVORS,
    SERVICES,
    WORKLOADS,
    ApiClient,
    Kube,
    pooled_copy,
)
from kubeio.clock import Clock, RealClock
from kubeio.errors import KubeError, PartialProgressError, PermanentError
from kubeio.events import EventRecorder
from kubeio.informer import SharedWatches, WatchSpec
from kubeio.kubelike import KubeLike
from kubeio.workqueue import WorkQueue
from shared import objectkeys
from shared.labels import DEFAULT_QUEUE, JOB_NAME_KEY
from shared.objectkeys import object_key
from shared.wire import WireObject, deletion_timestamp, metadata, spec_of, uid_of

log = logging.getLogger(__name__)

ReconcileFn = Callable[[Observed, PlanSettings], Plan]

# A worker that has not come back from one reconcile for this long makes /healthz fail.
WORKER_STALL_SECONDS = 300.0

WATCHES = (
    WatchSpec(JOBS),
    WatchSpec(PODS, JOB_NAME_KEY),
    WatchSpec(PODGROUPS),
    WatchSpec(COMMANDS),
    WatchSpec(SERVICES, JOB_NAME_KEY),
    WatchSpec(CONFIGMAPS, JOB_NAME_KEY),
    WatchSpec(NETWORK_POLICIES, JOB_NAME_KEY),
    WatchSpec(PVCS, JOB_NAME_KEY),
    WatchSpec(PRIORITY_CLASSES),
    # A job waiting for admission names its Queue's state as the cause (QueueClosed).
    WatchSpec(QUEUES),
)
# Kueue's objects (settings.kueue): a cluster without Kueue does not serve them and the watches
# idle, looking again now and then.
KUEUE_WATCHES = (WatchSpec(WORKLOADS), WatchSpec(RESOURCE_FLAVORS))
# Kubernetes' own PodGroups (settings.native_gang_schedulers): served from 1.37 with
# GenericWorkload; elsewhere the watch idles and looks again now and then. The same for the
# CompositePodGroups of the tasks' own gangs (alpha, gate CompositePodGroup).
NATIVE_GANG_WATCH = WatchSpec(NATIVE_PODGROUPS)
COMPOSITE_GANG_WATCH = WatchSpec(NATIVE_COMPOSITE_PODGROUPS)


@dataclass
class _Memory:
    uid: str
    data: dict[str, Any]
    # Set when the last reconcile was a fixpoint: the resync may skip the job.
    settled: resync.Settled | None = None


class Controller:
    def __init__(
        self,
        settings: Settings,
        api_client: ApiClient,
        *,
        reconcile: ReconcileFn | None = None,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        kube: KubeLike | None = None,
        recorder: EventRecorder | None = None,
        is_leader: Callable[[], bool] | None = None,
        watches: SharedWatches | None = None,
    ) -> None:
        """Alone (tests), it makes its own pooled client and recorder and always leads; under
        `controller.manager.Manager` it gets the process's `kube`, `metrics`, `recorder`,
        `is_leader` and `watches`."""
        self.settings = settings
        self.clock: Clock = clock or RealClock()
        self.metrics = metrics or Metrics()
        self._owns_client = kube is None
        if kube is None:
            # Alone, our own pool, sized as the process's.
            api_client = pooled_copy(api_client, settings.pool_size)
            kube = Kube(
                api_client,
                qps=settings.qps,
                burst=settings.burst,
                request_timeout=settings.request_timeout,
            )
        self.api_client = api_client
        self.kube = kube
        self.cache = Cache()
        self.queue = WorkQueue(clock=self.clock, hooks=self.metrics.queue_hooks())
        self._owns_recorder = recorder is None
        self.recorder = recorder or EventRecorder(
            self.kube, settings.identity, self.clock, asynchronous=True
        )
        self._is_leader: Callable[[], bool] = is_leader or (lambda: True)
        self.applier = Applier(self.kube, self.cache, self.recorder, self.metrics)
        self.failures = FailureReports(
            self.kube, self.cache, self.recorder, settings.failures_before_warning
        )
        self._reconcile: ReconcileFn = reconcile or plan_reconcile
        self._plan_settings = settings.plan_settings()
        self._memory: dict[str, _Memory] = {}
        self._memory_lock = threading.Lock()
        self._watch_stop = threading.Event()
        self._pending_listeners: list[Callable[[], None]] = []
        batching = BatchingStore(self.cache, self.queue, settings.event_batch_period)
        shared = watches or SharedWatches(self.kube)
        self.reflectors = [
            shared.reflector(
                spec,
                ForeignWriterWatch(
                    JobPhaseStore(self.cache, self._pending_listeners),
                    foreignwriters.OWN_MANAGER,
                    self.clock.now(),
                    self._report_foreign_writer,
                )
                if spec.resource is JOBS
                else batching
                if spec.resource in (PODS, PODGROUPS)
                else QueueStore(self.cache, self._enqueue_all)
                if spec.resource is QUEUES
                else self.cache,
                self._enqueue_all,
                self._watch_stop,
            )
            for spec in (
                *WATCHES,
                *(KUEUE_WATCHES if settings.kueue else ()),
                *(
                    (NATIVE_GANG_WATCH, COMPOSITE_GANG_WATCH)
                    if settings.native_gang_schedulers
                    else ()
                ),
            )
        ]
        self._queue_watch = next(r for r in self.reflectors if r.kind == QUEUES.cache_kind)
        self._native_gang_watch = next(
            (r for r in self.reflectors if r.kind == NATIVE_PODGROUPS.cache_kind), None
        )
        self._composite_gang_watch = next(
            (r for r in self.reflectors if r.kind == NATIVE_COMPOSITE_PODGROUPS.cache_kind), None
        )
        self._workers: list[threading.Thread] = []
        self._busy_since: dict[str, float] = {}
        self._threads: list[threading.Thread] = []
        self.reconciles = 0

    def _current_plan_settings(self) -> PlanSettings:
        """The planner's settings with what the cluster serves now: Kubernetes' own gang API may
        appear (or go) while the controller runs."""
        served = self._native_gang_watch is not None and self._native_gang_watch.served
        composite = self._composite_gang_watch is not None and self._composite_gang_watch.served
        queues = self._queue_watch.served
        current = self._plan_settings
        if (served, composite, queues) == (
            current.native_gang_served,
            current.composite_gang_served,
            current.queue_watched,
        ):
            return current
        return replace(
            current,
            native_gang_served=served,
            composite_gang_served=composite,
            queue_watched=queues,
        )

    # --- leadership ----------------------------------------------------------------------------

    def _report_foreign_writer(self, job: WireObject, manager: str) -> None:
        message = foreignwriters.warning(manager, foreignwriters.OWN_MANAGER)
        log.error(
            "another controller writes a Job's status",
            extra={"job": object_key(job), "manager": manager},
        )
        self.metrics.foreign_status_writers.labels(manager).inc()
        self.recorder.record(job, "Warning", foreignwriters.REASON, message)

    def on_job_pending(self, listener: Callable[[], None]) -> None:
        """Call `listener` (from the Job watch's thread: it must not block) whenever a job turns
        Pending."""
        self._pending_listeners.append(listener)

    def is_leader(self) -> bool:
        return self._is_leader()

    def started_leading(self) -> None:
        """The process won the Lease: every Job is looked at again."""
        self._enqueue_all(self.cache.job_keys())

    def stopped_leading(self) -> None:
        """The process lost the Lease: what it remembered of Jobs may be stale by its return."""
        with self._memory_lock:
            self._memory.clear()

    # --- health --------------------------------------------------------------------------------

    def healthz(self) -> tuple[bool, str]:
        dead = [r.kind for r in self.reflectors if not r.alive()]
        if dead:
            return False, f"watches stopped: {', '.join(dead)}"
        if not all(w.is_alive() for w in self._workers):
            return False, "a worker thread stopped"
        now = time.monotonic()
        stalled = [
            n for n, since in list(self._busy_since.items()) if now - since > WORKER_STALL_SECONDS
        ]
        if stalled:
            return False, f"workers stalled: {', '.join(stalled)}"
        return True, ""

    def readyz(self) -> tuple[bool, str]:
        waiting = [r.kind for r in self.reflectors if not r.synced]
        if waiting:
            return False, f"caches not synced: {', '.join(waiting)}"
        return True, ""

    def _caches_synced(self) -> bool:
        return all(r.synced for r in self.reflectors)

    def jobs(self) -> list[dict[str, Any]]:
        """Every Job: from the cache once the watches have synced (no request), else listed."""
        if self._caches_synced():
            return self.cache.jobs()
        return self.kube.list(JOBS)[0]

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(r.wait_synced(max(0.0, deadline - time.monotonic())) for r in self.reflectors)

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the watches, the workers and the resync timer."""
        for reflector in self.reflectors:
            reflector.start()
        for i in range(self.settings.workers):
            thread = threading.Thread(
                target=self._work, args=(f"worker-{i}",), name=f"worker-{i}", daemon=True
            )
            thread.start()
            self._workers.append(thread)
        self._spawn("resync", self._resync_loop)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def run(self, stop: threading.Event) -> None:
        """Run until `stop` is set, then shut down in order."""
        self.start()
        stop.wait()
        self.shutdown()

    def shutdown(self) -> None:
        """Stop watches, drain the queue with a deadline, write the pending events."""
        log.info("shutting down")
        self._watch_stop.set()
        for reflector in self.reflectors:
            reflector.close()
        self.queue.shutdown(drain=True)
        deadline = time.monotonic() + self.settings.drain_timeout
        for worker in self._workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        for thread in self._threads:
            thread.join(timeout=max(0.5, deadline - time.monotonic()))
        self.applier.close()
        if self._owns_recorder:
            self.recorder.close(timeout=max(0.5, deadline - time.monotonic()))
        if self._owns_client:
            self.api_client.close()  # type: ignore[no-untyped-call]
        log.info("stopped")

    def _resync_loop(self) -> None:
        """Every period, reconcile every job whose inputs changed since its last reconcile
        (`decide.resync`), spread evenly over the period so the workers see a steady trickle
        instead of every job at the same instant."""
        period = self.settings.resync_period
        while not self._watch_stop.wait(period):
            every = self.cache.job_keys()
            keys = [key for key in every if self.resync_replans(key, period)]
            self.metrics.resync_skips.inc(len(every) - len(keys))
            step = period / max(1, len(keys))
            for i, key in enumerate(keys):
                self.queue.add_after(key, i * step)

    def resync_replans(self, key: str, period: float) -> bool:
        """Whether the resync re-plans the job: not when its last reconcile was a fixpoint and
        nothing it reads has changed since (`decide.resync`)."""
        with self._memory_lock:
            remembered = self._memory.get(key)
        settled = remembered.settled if remembered is not None else None
        if settled is None:
            return True
        inputs = self._inputs(self.cache.view(key))
        return resync.replans(
            settled, inputs, self._current_plan_settings(), self.clock.monotonic(), period
        )

    def _inputs(self, view: JobView) -> resync.Inputs:
        """What a reconcile of the view's job reads from the cache, as versions."""
        job = view.job
        prebuilt = self._prebuilt_workload(job) if job is not None else None
        objects = [*view.objects(), *([prebuilt] if prebuilt is not None else [])]
        queue_name = str(spec_of(job).get("queue") or DEFAULT_QUEUE)
        return resync.inputs_of(
            objects,
            self.cache.cluster_wide_generation(),
            queue=(queue_name, self.cache.get(QUEUE, queue_name)),
        )

    def _enqueue_all(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.queue.add(key)

    # --- workers -------------------------------------------------------------------------------

    def _work(self, name: str) -> None:
        # Like client-go's WaitForCacheSync: a job observed before every cache listed would
        # look as if its pods were gone.
        while not self._caches_synced():
            if self.queue.shutting_down:
                return
            time.sleep(0.05)
        while True:
            key = self.queue.get(timeout=0.5)
            if key is None:
                if self.queue.shutting_down:
                    return
                continue
            self._busy_since[name] = time.monotonic()
            try:
                if self.is_leader():
                    self.process(key)
            finally:
                self._busy_since.pop(name, None)
                self.queue.done(key)

    def process(self, key: str) -> None:
        """One reconcile of one key with its retry bookkeeping (the queue holds the key)."""
        started = time.monotonic()
        result = "success"
        try:
            requeue_after, again = self.sync(key)
            self.queue.forget(key)
            if again:
                self.queue.add(key)
            elif requeue_after is not None:
                result = "requeue_after"
                self.queue.add_after(key, requeue_after.total_seconds())
        except PermanentError as exc:
            # Retrying the same request cannot help: no backoff loop. The Job's or the failing
            # input's next change (a watch event) brings the key back.
            result = "error"
            self.metrics.reconcile_errors.labels(CONTROLLER).inc()
            self.queue.forget(key)
            log.warning("reconcile failed permanently", extra={"job": key, "error": str(exc)})
            self.failures.permanent(key, exc)
        except Exception as exc:
            result = "error"
            self.metrics.reconcile_errors.labels(CONTROLLER).inc()
            if isinstance(exc, PartialProgressError):
                # The plan is getting through, just not all at once: no growing backoff.
                self.queue.forget(key)
            failures = self.queue.num_requeues(key) + 1
            self.queue.add_rate_limited(key)
            if isinstance(exc, KubeError):
                log.warning(
                    "reconcile failed, retrying",
                    extra={"job": key, "error": str(exc), "failures": failures},
                )
            else:
                log.exception(
                    "reconcile crashed, retrying", extra={"job": key, "failures": failures}
                )
            self.failures.repeated(key, failures, exc)
        finally:
            self.reconciles += 1
            self.metrics.reconcile_total.labels(CONTROLLER, result).inc()
            self.metrics.reconcile_time.labels(CONTROLLER).observe(time.monotonic() - started)

    def sync(self, key: str) -> tuple[timedelta | None, bool]:
        """One reconcile; returns the plan's requeue delay and whether objects were written
        (then the job is reconciled again at once: our own watch echoes do not trigger it)."""
        view = self.cache.view(key)
        job = view.job
        if job is not None and managed_by_other(job):
            # spec.managedBy names another controller: its status and children are not ours.
            self.cache.take_edges(key)
            if multikueue.dispatched(job) and self._plan_settings.kueue:
                # Kueue's side of it stays ours (its Workload, suspend): MultiKueue's contract.
                # What was written is looked at again at once, as for any other job.
                return self._sync_dispatched(job, view.workloads)
            return None, False
        if job is None or deletion_timestamp(job):
            # Deleted: the garbage collector removes the children through ownerReferences.
            with self._memory_lock:
                self._memory.pop(key, None)
            self.cache.take_edges(key)
            if job is None:
                self.metrics.volcano_jobs.forget(key)
            if job is None and view.commands:
                self._delete_orphan_commands(key, view.commands)
            return None, False
        uid = uid_of(job)
        with self._memory_lock:
            remembered = self._memory.get(key)
        memory = remembered.data if remembered is not None and remembered.uid == uid else None
        inputs = self._inputs(view)
        edges = self.cache.take_edges(key)
        try:
            looked_up = {
                name: self.kube.get_or_none(PVCS, job["metadata"]["namespace"], name)
                for name in pvcs_to_look_up(job, view)
            }
            observed = build_observed(
                view,
                now=self.clock.now(),
                edges=edges,
                memory=memory,
                priority_values=self.cache.priority_values(),
                looked_up_pvcs=looked_up,
                resource_flavors=self.cache.resource_flavors(),
                prebuilt_workload=self._prebuilt_workload(job),
            )
            if observed is None:
                return None, False
            if waits_for_admission(job, observed.pod_group):
                queue_name = str(job.get("spec", {}).get("queue") or DEFAULT_QUEUE)
                queue_read = self._look_up_queue(queue_name)
                if queue_read is not None:
                    observed = replace(observed, queue=queue_read[0], queue_looked_up=True)
            if needs_generated_key(observed.job, observed.children, observed.memory):
                fresh = generate_key_pair(self._plan_settings.ssh_key_type)
                observed = replace(observed, ssh_key=fresh)
            settings = self._current_plan_settings()
            plan = self._reconcile(observed, settings)
            if plan.guard_uid is None:
                plan.guard_uid = uid
            result = self.applier.apply(job, plan)
        except JobGoneError as gone:
            log.info("job gone while applying", extra={"job": key, "detail": str(gone)})
            return None, False
        except BaseException:
            self.cache.return_edges(key, edges)
            raise
        # A written phase is a decision whose effects the next reconcile carries out: go on at
        # once (the watch echo of our own status write does not enqueue the job again).
        again = follow_up_needed(job, plan, result.objects_written)
        settled = None
        if not again and resync.is_fixpoint(
            inputs,
            self._inputs(self.cache.view(key)),
            memory_kept=plan.memory == (memory or {}),
            read_outside=bool(looked_up) or observed.ssh_key is not None,
            edges_taken=bool(edges),
        ):
            settled = resync.Settled(inputs, settings, self.clock.monotonic())
        with self._memory_lock:
            self._memory[key] = _Memory(uid, plan.memory, settled)
        return plan.requeue_after, again

    def _sync_dispatched(
        self, job: WireObject, workloads: list[WireObject]
    ) -> tuple[timedelta | None, bool]:
        """Kueue's steps for a job MultiKueue dispatches: when to look again, and whether
        anything was written."""
        if deletion_timestamp(job):
            return None, False
        workload = next((w for w in workloads if kueue.is_controlled_by(w, job)), None)
        plan = multikueue.plan_dispatched(
            job, workload, priority_values=self.cache.priority_values(), now=self.clock.now()
        )
        if multikueue.writes_nothing(plan):
            return plan.requeue_after, False
        plan.guard_uid = uid_of(job)
        self.applier.apply(job, plan)
        return plan.requeue_after, not plan.delete_job

    def _prebuilt_workload(self, job: WireObject) -> WireObject | None:
        """The Workload MultiKueue made for a copy on this worker cluster, as cached."""
        name = kueue.prebuilt_workload_name(job)
        if name is None:
            return None
        return self.cache.get(WORKLOAD, objectkeys.key(job["metadata"]["namespace"], name))

    def _look_up_queue(self, name: str) -> tuple[WireObject | None] | None:
        """The Queue `name` as watched (None inside: it does not exist); None when the cluster
        serves no Queues."""
        if not self._queue_watch.served:
            return None
        return (self.cache.get(QUEUE, name),)

    def _delete_orphan_commands(self, key: str, commands: list[dict[str, Any]]) -> None:
        """Commands whose Job does not exist can never run: delete them. The cache may lag
        behind a Job just created, so the API decides whether the Job exists."""
        namespace, _, name = key.partition("/")
        if self.kube.get_or_none(JOBS, namespace, name) is not None:
            return
        for command in commands:
            meta = metadata(command)
            self.kube.delete(COMMANDS, namespace, str(meta.get("name")), uid=meta.get("uid"))
            self.cache.forget_deleted("Command", namespace, str(meta.get("name")))
            log.info(
                "command deleted: its job does not exist",
                extra={"job": key, "command": meta.get("name"), "action": command.get("action")},
            )
