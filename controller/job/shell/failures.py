"""What the job controller reports when reconciling a job fails: a Warning Event on the job and
its `state.message` naming the failing request and the error (a permanent error at once, a
transient one after `--failures-before-warning` failures in a row, then every 20th)."""

from __future__ import annotations

import copy
import logging

from controller.job.shell.cache import Cache
from kubeio.client import JOBS
from kubeio.errors import KubeError, NotFoundError
from kubeio.events import EventRecorder
from kubeio.kubelike import KubeLike
from shared.wire import WireObject, job_state

log = logging.getLogger(__name__)


class FailureReports:
    def __init__(
        self, kube: KubeLike, cache: Cache, recorder: EventRecorder, failures_before_warning: int
    ) -> None:
        self.kube = kube
        self.cache = cache
        self.recorder = recorder
        self.failures_before_warning = failures_before_warning

    def permanent(self, key: str, exc: KubeError) -> None:
        """A Warning Event and the job's state message name the failing request and the error."""
        job = self.cache.job(key)
        if job is None:
            return
        message = f"reconcile failed and is retried when the job changes: {exc}"[:1024]
        self.recorder.record(job, "Warning", "ReconcileFailed", message)
        if job_state(job).get("message") == message:
            return  # written already: writing it again would wake this job up in a loop
        self._write_state_message(key, job, message)

    def repeated(self, key: str, failures: int, exc: BaseException) -> None:
        threshold = self.failures_before_warning
        if failures < threshold or (failures - threshold) % 20:
            return
        job = self.cache.job(key)
        if job is None:
            return
        message = f"reconcile failed {failures} times in a row, retrying: {exc}"[:1024]
        self.recorder.record(job, "Warning", "ReconcileFailing", message)
        self._write_state_message(key, job, message)

    def _write_state_message(self, key: str, job: WireObject, message: str) -> None:
        """Best effort, with the same status PUT as every status write (a stale copy gets a 409
        and the next failure writes it again)."""
        body = copy.deepcopy(job)
        body.setdefault("status", {}).setdefault("state", {})["message"] = message
        try:
            written = self.kube.replace_status(JOBS, job["metadata"]["namespace"], body)
        except NotFoundError:
            return
        except KubeError as write_error:
            log.warning("state message not written", extra={"job": key, "error": str(write_error)})
            return
        written.setdefault("kind", "Job")
        self.cache.store_written("Job", written)
