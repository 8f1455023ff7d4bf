"""batch.volcano.sh/v1alpha1 CronJob: creates a Job from its template on a cron schedule."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

from pydantic import Field

from shared import kubeschema, labels
from shared.models.base import KubeModel, KubeObject
from shared.models.job import KUBERNETES_SCHEMA, JobSpec

CRONJOB_KIND: Final = "CronJob"
# Set on every Job a CronJob creates: the slot it was created for (RFC 3339, in the CronJob's
# time zone, UTC when it has none).
SCHEDULED_TIMESTAMP_ANNOTATION: Final = "volcano.sh/cronjob-scheduled-timestamp"
DEFAULT_SUCCESSFUL_HISTORY: Final = 3
DEFAULT_FAILED_HISTORY: Final = 1


class ConcurrencyPolicy(StrEnum):
    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"


class JobTemplateSpec(KubeModel):
    """The Job each run creates: only the template's labels and annotations are used."""

    # Embedded metadata as Volcano's CRD has it: labels, annotations, finalizers, name, namespace.
    metadata: dict[str, Any] | None = Field(
        default=None, json_schema_extra={KUBERNETES_SCHEMA: kubeschema.OBJECT_META}
    )
    """Labels and annotations given to every Job the CronJob creates."""
    spec: JobSpec = Field(default_factory=JobSpec)
    """The spec of every Job the CronJob creates."""


class CronJobSpec(KubeModel):
    schedule: str
    """When to create a Job: five cron fields (minute hour day-of-month month day-of-week) or
    @hourly, @daily, @weekly, @monthly, @yearly, @every <duration>."""
    time_zone: str | None = None
    """The IANA time zone the schedule is read in (e.g. Europe/Paris); the controller's local zone
    when unset."""
    starting_deadline_seconds: int | None = Field(default=None, ge=0)
    """A run that could not start within this many seconds of its time is skipped."""
    concurrency_policy: ConcurrencyPolicy = ConcurrencyPolicy.ALLOW
    """What to do when a run is due while the previous Job still runs: Allow (run both), Forbid
    (skip the new run) or Replace (delete the old Job)."""
    suspend: bool = False
    """True stops new runs; Jobs already created are left alone."""
    job_template: JobTemplateSpec
    """The Job each run creates."""
    successful_jobs_history_limit: int = Field(default=DEFAULT_SUCCESSFUL_HISTORY, ge=0)
    """How many finished successful Jobs to keep (3 by default)."""
    failed_jobs_history_limit: int = Field(default=DEFAULT_FAILED_HISTORY, ge=0)
    """How many failed Jobs to keep (1 by default)."""


class ObjectReference(KubeModel):
    api_version: str | None = None
    """API version of the Job."""
    kind: str | None = None
    """Kind of the Job."""
    name: str | None = None
    """Name of the Job."""
    namespace: str | None = None
    """Namespace of the Job."""
    uid: str | None = None
    """UID of the Job."""
    resource_version: str | None = None
    """The Job's resourceVersion when it was recorded."""


class CronJobStatus(KubeModel):
    active: list[ObjectReference] | None = None
    """The Jobs of this CronJob that are still running."""
    last_schedule_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """The time of the last run a Job was created for."""
    last_successful_time: str | None = Field(
        default=None, json_schema_extra={"format": "date-time"}
    )
    """When the last Job of this CronJob completed successfully."""


class CronJob(KubeObject):
    """Creates Volcano Jobs on a cron schedule."""

    api_version: str | None = labels.BATCH_API_VERSION
    kind: str | None = CRONJOB_KIND
    spec: CronJobSpec
    """The schedule and the Job it creates."""
    status: CronJobStatus | None = None
    """The running Jobs and the last runs."""
