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
    spec: JobSpec = Field(default_factory=JobSpec)


class CronJobSpec(KubeModel):
    schedule: str
    time_zone: str | None = None
    starting_deadline_seconds: int | None = Field(default=None, ge=0)
    concurrency_policy: ConcurrencyPolicy = ConcurrencyPolicy.ALLOW
    suspend: bool = False
    job_template: JobTemplateSpec
    successful_jobs_history_limit: int = Field(default=DEFAULT_SUCCESSFUL_HISTORY, ge=0)
    failed_jobs_history_limit: int = Field(default=DEFAULT_FAILED_HISTORY, ge=0)


class ObjectReference(KubeModel):
    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None


class CronJobStatus(KubeModel):
    active: list[ObjectReference] | None = None
    last_schedule_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    last_successful_time: str | None = Field(
        default=None, json_schema_extra={"format": "date-time"}
    )


class CronJob(KubeObject):
    """Creates Volcano Jobs on a cron schedule."""

    api_version: str | None = labels.BATCH_API_VERSION
    kind: str | None = CRONJOB_KIND
    spec: CronJobSpec
    status: CronJobStatus | None = None
