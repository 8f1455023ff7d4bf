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
    """The header's name."""
    value: str
    """The header's value."""


class HttpGet(KubeModel):
    task_name: str | None = Field(default=None, max_length=253)
    """The task of the target Job whose pods are probed."""
    path: str | None = None
    """The HTTP path to GET; a 2xx or 3xx answer passes."""
    port: int | None = Field(default=None, ge=0, le=65535)
    """The pods' port."""
    http_header: HTTPHeader | None = None
    """A header sent with the request."""


class TcpSocket(KubeModel):
    task_name: str | None = Field(default=None, max_length=253)
    """The task of the target Job whose pods are probed."""
    port: int = Field(ge=0, le=65535)
    """The pods' port that must accept a connection."""


class TaskStatusProbe(KubeModel):
    task_name: str | None = Field(default=None, max_length=253)
    """The task of the target Job."""
    phase: str | None = Field(default=None, max_length=63)
    """The pod phase every pod of the task must be in."""


class Probe(KubeModel):
    http_get_list: list[HttpGet] | None = None
    """HTTP GETs that must pass on the targets' pods."""
    tcp_socket_list: list[TcpSocket] | None = None
    """TCP ports that must accept connections on the targets' pods."""
    task_status_list: list[TaskStatusProbe] | None = None
    """Task phases the targets' pods must be in."""


class DependsOn(KubeModel):
    targets: list[str] | None = None
    """The flows whose Jobs this one waits for."""
    probe: Probe | None = None
    """Checks on the targets' pods that must pass too (vcjob runs them; Volcano ignores them)."""
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
    """The JobTemplate the step's Job is made from; the Job is named <flow>-<name>."""
    depends_on: DependsOn | None = None
    """What must have happened before the step's Job is created."""
    patch: Patch | None = None
    """Changes to the template's spec for this flow (vcjob applies them; Volcano ignores them)."""


class JobFlowSpec(KubeModel):
    flows: list[Flow] | None = None
    """The steps of the flow and their dependencies (a DAG)."""
    job_retain_policy: RetainPolicy | None = None
    """retain (default) keeps the flow's Jobs once it Succeeds; delete removes them."""


class JobRunningHistory(KubeModel):
    start_timestamp: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the Job entered the phase."""
    end_timestamp: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When it left it."""
    state: str | None = None
    """The Job's phase."""


class FlowJobStatus(KubeModel):
    name: str | None = None
    """The Job's name."""
    state: str | None = None
    """The Job's phase."""
    start_timestamp: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the Job was created."""
    end_timestamp: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the Job finished."""
    restart_count: int | None = Field(default=None, ge=0)
    """The Job's retries."""
    running_histories: list[JobRunningHistory] | None = None
    """The phases the Job went through."""


class FlowCondition(KubeModel):
    phase: str | None = None
    """The Job's phase."""
    create_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the Job was created."""
    running_duration: str | None = None
    """How long the Job has run."""
    task_status_count: dict[str, TaskState] | None = None
    """The Job's pods by task and phase."""


class FlowState(KubeModel):
    phase: FlowPhase | None = None
    """Pending, Running, Succeed, Terminating or Failed."""


class JobFlowStatus(KubeModel):
    pending_jobs: list[str] | None = None
    """The flow's Jobs that are Pending."""
    running_jobs: list[str] | None = None
    """The flow's Jobs that are Running."""
    failed_jobs: list[str] | None = None
    """The flow's Jobs that Failed."""
    completed_jobs: list[str] | None = None
    """The flow's Jobs that Completed."""
    terminated_jobs: list[str] | None = None
    """The flow's Jobs that were Terminated."""
    un_know_jobs: list[str] | None = Field(default=None, alias="unKnowJobs")
    """The flow's Jobs in any other phase (Volcano's spelling)."""
    job_status_list: list[FlowJobStatus] | None = None
    """Each Job of the flow with its phase and history."""
    conditions: dict[str, FlowCondition] | None = None
    """Each Job of the flow by name: phase, creation time, running time, pods by phase."""
    state: FlowState | None = None
    """The flow's phase."""


class JobFlow(KubeObject):
    """Runs Jobs made from JobTemplates in the order of their dependencies."""

    api_version: str | None = FLOW_API_VERSION
    kind: str | None = JOBFLOW_KIND
    spec: JobFlowSpec = Field(default_factory=JobFlowSpec)
    """The flow's steps and what happens to its Jobs once it succeeds."""
    status: JobFlowStatus | None = None
    """The flow's phase and its Jobs' phases."""


class JobTemplateStatus(KubeModel):
    job_depends_on_list: list[str] | None = None
    """The Jobs made from this template."""


class JobTemplate(KubeObject):
    """A Job spec that JobFlows create Jobs from."""

    api_version: str | None = FLOW_API_VERSION
    kind: str | None = JOBTEMPLATE_KIND
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobTemplateStatus | None = None
    """The Jobs made from the template."""
