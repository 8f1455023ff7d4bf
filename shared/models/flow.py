"""flow.volcano.sh/v1alpha1 JobFlow and JobTemplate: a DAG of Jobs made from templates.

The wire names are Volcano's (including its `unKnowJobs` spelling). Two fields are vcjob's own:
`dependsOn.phases` (the target phases that meet a dependency; Volcano only knows Completed) and
the patch's schema marker (`PARTIAL_JOB_SPEC`): a patch is a partial JobSpec, so its CRD schema
has the Job's types but neither defaults nor required fields.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

from pydantic import Field

from shared.models.base import KubeModel, KubeObject
from shared.models.job import JobPhase, JobSpec, TaskState

FLOW_GROUP: Final = "flow.volcano.sh"
FLOW_VERSION: Final = "v1alpha1"
FLOW_API_VERSION: Final = f"{FLOW_GROUP}/{FLOW_VERSION}"
JOBFLOW_KIND: Final = "JobFlow"
JOBTEMPLATE_KIND: Final = "JobTemplate"
# Label and annotation on every Job a flow creates, `<namespace>.<name>` as Volcano writes them.
CREATED_BY_JOBFLOW: Final = "volcano.sh/createdByJobFlow"
CREATED_BY_JOBTEMPLATE: Final = "volcano.sh/createdByJobTemplate"
JOBFLOW_VALIDATE_PATH: Final = "/jobflows/validate"
JOBTEMPLATE_VALIDATE_PATH: Final = "/jobtemplates/validate"
JOBFLOW_VALIDATING_WEBHOOK_NAME: Final = "validatejobflow.vcjob.volcano.sh"
JOBTEMPLATE_VALIDATING_WEBHOOK_NAME: Final = "validatejobtemplate.vcjob.volcano.sh"
# A crdgen marker: the node holds a partial JobSpec (the Job's schema, no defaults, no required).
PARTIAL_JOB_SPEC: Final = "x-vcjob-partial-job-spec"


class RetainPolicy(StrEnum):
    RETAIN = "retain"
    DELETE = "delete"


class FlowPhase(StrEnum):
    SUCCEED = "Succeed"
    TERMINATING = "Terminating"
    FAILED = "Failed"
    RUNNING = "Running"
    PENDING = "Pending"


# The target phases a dependency may wait for: the phases a Job ends in.
DEPENDABLE_PHASES: Final = (JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED)
DEFAULT_DEPENDENCY_PHASES: Final = (JobPhase.COMPLETED,)


class HTTPHeader(KubeModel):
    name: str
    value: str


class HttpGet(KubeModel):
    task_name: str | None = Field(default=None, max_length=253)
    path: str | None = None
    port: int | None = Field(default=None, ge=0, le=65535)
    http_header: HTTPHeader | None = None


class TcpSocket(KubeModel):
    task_name: str | None = Field(default=None, max_length=253)
    port: int = Field(ge=0, le=65535)


class TaskStatusProbe(KubeModel):
    task_name: str | None = Field(default=None, max_length=253)
    phase: str | None = Field(default=None, max_length=63)


class Probe(KubeModel):
    http_get_list: list[HttpGet] | None = None
    tcp_socket_list: list[TcpSocket] | None = None
    task_status_list: list[TaskStatusProbe] | None = None


class DependsOn(KubeModel):
    targets: list[str] | None = None
    probe: Probe | None = None
    phases: list[JobPhase] | None = Field(
        default=None,
        description=(
            "The phases of the target Jobs that meet this dependency (vcjob's extension; "
            "default [Completed]). Completed, Failed and Terminated may be named."
        ),
        json_schema_extra={
            "items": {"type": "string", "enum": [p.value for p in DEPENDABLE_PHASES]}
        },
    )


class Patch(KubeModel):
    job_spec: dict[str, Any] | None = Field(
        default=None,
        description="Merged into the JobTemplate's spec for this flow's Job.",
        json_schema_extra={PARTIAL_JOB_SPEC: True},
    )


class Flow(KubeModel):
    name: str = Field(min_length=1)
    depends_on: DependsOn | None = None
    patch: Patch | None = None


class JobFlowSpec(KubeModel):
    flows: list[Flow] | None = None
    job_retain_policy: RetainPolicy | None = None


class JobRunningHistory(KubeModel):
    start_timestamp: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    end_timestamp: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    state: str | None = None


class FlowJobStatus(KubeModel):
    name: str | None = None
    state: str | None = None
    start_timestamp: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    end_timestamp: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    restart_count: int | None = Field(default=None, ge=0)
    running_histories: list[JobRunningHistory] | None = None


class FlowCondition(KubeModel):
    phase: str | None = None
    create_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    running_duration: str | None = None
    task_status_count: dict[str, TaskState] | None = None


class FlowState(KubeModel):
    phase: FlowPhase | None = None


class JobFlowStatus(KubeModel):
    pending_jobs: list[str] | None = None
    running_jobs: list[str] | None = None
    failed_jobs: list[str] | None = None
    completed_jobs: list[str] | None = None
    terminated_jobs: list[str] | None = None
    un_know_jobs: list[str] | None = Field(default=None, alias="unKnowJobs")
    job_status_list: list[FlowJobStatus] | None = None
    conditions: dict[str, FlowCondition] | None = None
    state: FlowState | None = None


class JobFlow(KubeObject):
    """Runs Jobs made from JobTemplates in the order of their dependencies."""

    api_version: str | None = FLOW_API_VERSION
    kind: str | None = JOBFLOW_KIND
    spec: JobFlowSpec = Field(default_factory=JobFlowSpec)
    status: JobFlowStatus | None = None


class JobTemplateStatus(KubeModel):
    job_depends_on_list: list[str] | None = None


class JobTemplate(KubeObject):
    """A Job spec that JobFlows create Jobs from."""

    api_version: str | None = FLOW_API_VERSION
    kind: str | None = JOBTEMPLATE_KIND
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobTemplateStatus | None = None
