"""The JobFlow controller's I/O: informers for JobFlows, JobTemplates and Jobs, one work queue
(keys `flow/<ns>/<name>` and `template/<ns>/<name>`), the probes `plan.probes_to_run` asks for,
and the writes `plan.plan` decides. It runs inside the `vcjob controller` process and acts only
while that process holds the leader Lease."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable
from typing import Final

from controller.jobflow.decide.plan import FlowPlan, plan, probes_to_run, template_status
from controller.jobflow.shell.probes import run_probes
from controller.keyworkers import KeyWorkers
from controller.objectstore import Informer, key_of
from kubeio.client import JOBS, PODS, Resource
from kubeio.clock import Clock, RealClock
from kubeio.errors import AlreadyExistsError, ConflictError, KubeError, NotFoundError
from kubeio.events import EventRecorder
from kubeio.informer import SharedWatches
from kubeio.kubelike import KubeLike
from shared import labels, objectkeys
from shared.models.flow import (
    CREATED_BY_JOBTEMPLATE,
    FLOW_GROUP,
    FLOW_VERSION,
    JOBFLOW_KIND,
    JOBTEMPLATE_KIND,
)
from shared.wire import WireObject, annotations_of, metadata, owner_references, spec_of, status_of

log = logging.getLogger(__name__)

JOBFLOWS: Final = Resource(FLOW_GROUP, FLOW_VERSION, "jobflows", JOBFLOW_KIND)
JOBTEMPLATES: Final = Resource(FLOW_GROUP, FLOW_VERSION, "jobtemplates", JOBTEMPLATE_KIND)
FLOW_PREFIX: Final = "flow/"
TEMPLATE_PREFIX: Final = "template/"
MAX_REQUEUES: Final = 15


def flow_of(job: WireObject) -> str | None:
    """The key of the JobFlow controlling the Job, if one does."""
    for ref in owner_references(job):
        if ref.get("controller") and ref.get("kind") == JOBFLOW_KIND:
            return f"{metadata(job).get('namespace')}/{ref.get('name')}"
    return None


def template_of(job: WireObject) -> str | None:
    """The key of the JobTemplate the Job was made from (`<namespace>.<name>` in its
    annotation: a namespace has no dots, so the first one splits)."""
    mark = annotations_of(job).get(CREATED_BY_JOBTEMPLATE)
    if not isinstance(mark, str) or "." not in mark:
        return None
    namespace, name = mark.split(".", 1)
    return objectkeys.key(namespace, name)


def made_by_flow(job: WireObject) -> bool:
    """The Jobs this controller follows: a JobFlow's, or made from a JobTemplate."""
    return flow_of(job) is not None or template_of(job) is not None


class JobFlowController(KeyWorkers):
    thread_prefix = "jobflow"

    def __init__(
        self,
        kube: KubeLike,
        recorder: EventRecorder,
        is_leader: Callable[[], bool],
        *,
        clock: Clock | None = None,
        workers: int = 2,
        watches: SharedWatches | None = None,
    ) -> None:
        super().__init__(is_leader, workers, watches)
        self.kube = kube
        self.recorder = recorder
        self.clock: Clock = clock or RealClock()
        self.flows = self._informer(kube, JOBFLOWS, self._on_flow)
        self.templates = self._informer(kube, JOBTEMPLATES, self._on_template)
        # Only the Jobs of a flow or a template: not a third copy of every Job.
        self.jobs = self._informer(kube, JOBS, self._on_job, keep=made_by_flow)

    # --- events -> keys --------------------------------------------------------------------

    def _on_flow(self, old: WireObject | None, new: WireObject | None) -> None:
        self.queue.add(FLOW_PREFIX + key_of(new or old or {}))

    def _on_template(self, old: WireObject | None, new: WireObject | None) -> None:
        template = new or old or {}
        self.queue.add(TEMPLATE_PREFIX + key_of(template))
        # A flow waiting for this template goes on at once.
        namespace, name = metadata(template).get("namespace"), metadata(template).get("name")
        for flow in self.flows.items():
            flows = spec_of(flow).get("flows") or []
            if metadata(flow).get("namespace") == namespace and any(
                isinstance(f, dict) and f.get("name") == name for f in flows
            ):
                self.queue.add(FLOW_PREFIX + key_of(flow))

    def _on_job(self, old: WireObject | None, new: WireObject | None) -> None:
        for job in (old, new):
            if job is None:
                continue
            flow = flow_of(job)
            if flow is not None:
                self.queue.add(FLOW_PREFIX + flow)
            template = template_of(job)
            if template is not None:
                self.queue.add(TEMPLATE_PREFIX + template)

    # --- KeyWorkers ------------------------------------------------------------------------

    def informers(self) -> list[Informer]:
        return [self.flows, self.templates, self.jobs]

    def resync_keys(self) -> Iterable[str]:
        return [FLOW_PREFIX + key_of(flow) for flow in self.flows.items()] + [
            TEMPLATE_PREFIX + key_of(t) for t in self.templates.items()
        ]

    def handle(self, key: str) -> float | None:
        if key.startswith(TEMPLATE_PREFIX):
            self.sync_template(key[len(TEMPLATE_PREFIX) :])
            return None
        return self.sync_flow(key[len(FLOW_PREFIX) :])

    def failed(self, key: str, exc: Exception) -> None:
        failures = self.queue.num_requeues(key) + 1
        if isinstance(exc, KubeError):
            log.warning("jobflow sync failed", extra={"key": key, "error": str(exc)})
        else:
            log.exception("jobflow sync crashed", extra={"key": key})
        if failures <= MAX_REQUEUES or isinstance(exc, ConflictError):
            self.queue.add_rate_limited(key)
        else:
            # The next change of the flow, a template or a Job brings it back.
            self.queue.forget(key)

    def healthy(self) -> bool:
        return all(informer.alive() for informer in self.informers())

    # --- one flow --------------------------------------------------------------------------

    def _jobs_of(self, flow: WireObject) -> list[WireObject]:
        meta = metadata(flow)
        uid, namespace = meta.get("uid"), meta.get("namespace")
        out = []
        for job in self.jobs.items():
            if metadata(job).get("namespace") != namespace:
                continue
            refs = owner_references(job)
            if any(r.get("controller") and r.get("uid") == uid for r in refs):
                out.append(job)
        return out

    def _templates_in(self, namespace: str) -> dict[str, WireObject]:
        return {
            str(metadata(t).get("name")): t
            for t in self.templates.items()
            if metadata(t).get("namespace") == namespace
        }

    def _pods_of(self, namespace: str, job_names: set[str]) -> dict[str, list[WireObject]]:
        pods: dict[str, list[WireObject]] = {name: [] for name in job_names}
        for name in job_names:
            items, _ = self.kube.list(PODS, label_selector=f"{labels.JOB_NAME_KEY}={name}")
            pods[name] = [p for p in items if metadata(p).get("namespace") == namespace]
        return pods

    def sync_flow(self, key: str) -> float | None:
        raw = self.flows.get(key)
        if raw is None or metadata(raw).get("deletionTimestamp"):
            return None
        raw.setdefault("kind", JOBFLOW_KIND)
        namespace = str(metadata(raw).get("namespace"))
        jobs = self._jobs_of(raw)
        checks = probes_to_run(raw, jobs)
        outcomes = {}
        if checks:
            by_name = {str(metadata(j).get("name")): j for j in jobs}
            pods = self._pods_of(namespace, {c.target_job for c in checks})
            outcomes = run_probes(checks, by_name, pods)
        decided = plan(raw, self._templates_in(namespace), jobs, outcomes, self.clock.now())
        if decided.create and self._stale(raw):
            return 0.0  # planned again from the flow as the API server has it
        for event in decided.events:
            self.recorder.record(raw, event.type, event.reason, event.message)
        self._create(raw, decided)
        # Succeed is persisted before the Jobs are deleted: a flow whose Jobs are gone but whose
        # status is not final would create them all again.
        self._write_flow_status(raw, decided)
        self._delete(raw, decided)
        return None if decided.requeue_after is None else decided.requeue_after.total_seconds()

    def _stale(self, raw: WireObject) -> bool:
        """Whether the cached flow is behind the API server's (then the cache takes it). A Job
        is created only from the flow's current status: a stale one may still be Running after
        the flow Succeeded and its Jobs were deleted (`jobRetainPolicy: delete`)."""
        meta = metadata(raw)
        fresh = self.kube.get_or_none(JOBFLOWS, str(meta.get("namespace")), str(meta.get("name")))
        if fresh is None or metadata(fresh).get("resourceVersion") == meta.get("resourceVersion"):
            return False
        fresh.setdefault("kind", JOBFLOW_KIND)
        self.flows.put(fresh)
        return True

    def _create(self, raw: WireObject, decided: FlowPlan) -> None:
        namespace = str(metadata(raw).get("namespace"))
        for job in decided.create:
            name = job["metadata"]["name"]
            try:
                created = self.kube.create(JOBS, namespace, job)
            except AlreadyExistsError:
                existing = self.kube.get_or_none(JOBS, namespace, name)
                if existing is not None and flow_of(existing) != key_of(raw):
                    self.recorder.record(
                        raw, "Warning", "ForeignJob", f"job {name} exists and is not this flow's"
                    )
                continue
            except KubeError as exc:
                self.recorder.record(raw, "Warning", "FailedCreate", f"create job {name}: {exc}")
                raise
            created.setdefault("kind", labels.JOB_KIND)
            self.jobs.put(created)
            self.recorder.record(raw, "Normal", "Created", f"create a job named {name}!")

    def _delete(self, raw: WireObject, decided: FlowPlan) -> None:
        namespace = str(metadata(raw).get("namespace"))
        for name in decided.delete:
            self.kube.delete(JOBS, namespace, name, propagation="Background")
            self.recorder.record(
                raw, "Normal", "Deleted", f"deleted job {name} (jobRetainPolicy delete)"
            )

    def _write_flow_status(self, raw: WireObject, decided: FlowPlan) -> None:
        if status_of(raw) == decided.status:
            return
        body = copy.deepcopy(raw)
        body["status"] = decided.status
        try:
            written = self.kube.replace_status(JOBFLOWS, str(metadata(raw).get("namespace")), body)
        except NotFoundError:
            return
        self.flows.put(written)

    # --- one template ----------------------------------------------------------------------

    def sync_template(self, key: str) -> None:
        raw = self.templates.get(key)
        if raw is None or metadata(raw).get("deletionTimestamp"):
            return
        wanted = template_status(raw, self.jobs.items())
        if status_of(raw) == wanted:
            return
        body = copy.deepcopy(raw)
        body["status"] = wanted
        try:
            written = self.kube.replace_status(
                JOBTEMPLATES, str(metadata(raw).get("namespace")), body
            )
        except NotFoundError:
            return
        self.templates.put(written)
