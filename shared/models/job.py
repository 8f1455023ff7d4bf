"""batch.volcano.sh/v1alpha1 Job: the spec users write and the status the controller reports."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from shared import kubeschema, labels
from shared.models.base import KubeModel, KubeObject

# Marks a field whose CRD schema is a Kubernetes type, inlined from the API's own definitions
# (the model keeps it a plain dict: pod templates stay dicts).
KUBERNETES_SCHEMA: Final = "x-vcjob-kubernetes-schema"
POD_TEMPLATE: Final[JsonDict] = {KUBERNETES_SCHEMA: kubeschema.POD_TEMPLATE_SPEC}
PVC_SPEC: Final[JsonDict] = {KUBERNETES_SCHEMA: kubeschema.PVC_SPEC}
RESOURCE_LIST: Final[JsonDict] = {KUBERNETES_SCHEMA: "ResourceList"}
LABEL_SELECTOR: Final[JsonDict] = {KUBERNETES_SCHEMA: kubeschema.LABEL_SELECTOR}


class PolicyEvent(StrEnum):
    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"
    JOB_UPDATED = "JobUpdated"


# Events the CRD accepts: the user-facing ones plus the controller's internal ones (the webhook
# still refuses the internal ones in policies).
INTERNAL_EVENTS: Final = ("PodRunning", "OutOfSync", "CommandIssued")
CRD_EVENTS: Final = (*(e.value for e in PolicyEvent), *INTERNAL_EVENTS)


class PolicyAction(StrEnum):
    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    RESTART_PARTITION = "RestartPartition"


class JobPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


FINISHED_PHASES: Final = frozenset({JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED})
TOPOLOGY_POLICIES: Final = ("none", "best-effort", "restricted", "single-numa-node")
SUPPORTED_PLUGINS: Final = (
    "env",
    "svc",
    "ssh",
    "tensorflow",
    "pytorch",
    "mpi",
    "ray",
    "hcclrank",
)
NETWORK_TOPOLOGY_MODES: Final = ("hard", "soft")
PARTITION_ID_LABEL: Final = "volcano.sh/partition-id"
COMMAND_ACTIONS: Final = (
    PolicyAction.ABORT_JOB,
    PolicyAction.RESUME_JOB,
    PolicyAction.RESTART_JOB,
    PolicyAction.TERMINATE_JOB,
    PolicyAction.COMPLETE_JOB,
)


class LifecyclePolicy(KubeModel):
    # A plain string in the CRD, as in Volcano's: the webhook checks the action.
    action: str | None = None
    event: str | None = Field(default=None, json_schema_extra={"enum": list(CRD_EVENTS)})
    events: list[str] | None = Field(
        default=None,
        json_schema_extra={"items": {"type": "string", "enum": list(CRD_EVENTS)}},
    )
    exit_code: int | None = None
    timeout: str | None = None

    def event_list(self) -> list[str]:
        """`event` and `events` together, in order (Volcano merges them the same way)."""
        out = [self.event] if self.event else []
        out.extend(self.events or [])
        return out


class DependsOn(KubeModel):
    name: list[str] | None = None
    # No enum in the CRD (Volcano's has none); the webhook checks it.
    iteration: str | None = None


class NetworkTopology(KubeModel):
    """Hypernode tier constraint; `highestTierAllowed` and `highestTierName` are exclusive."""

    mode: str | None = Field(
        default=None, json_schema_extra={"enum": list(NETWORK_TOPOLOGY_MODES), "default": "hard"}
    )
    highest_tier_allowed: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    highest_tier_name: str | None = Field(default=None, max_length=253)


class PartitionPolicy(KubeModel):
    """A task split into `totalPartitions` groups of `partitionSize` pods."""

    # Required in the CRD; optional here so the webhook can name what is missing.
    model_config = ConfigDict(json_schema_extra={"required": ["totalPartitions", "partitionSize"]})

    total_partitions: int | None = Field(default=None, json_schema_extra={"minimum": 1})
    partition_size: int | None = Field(default=None, json_schema_extra={"minimum": 1})
    min_partitions: int | None = Field(default=None, json_schema_extra={"default": 0, "minimum": 0})
    network_topology: NetworkTopology | None = None


class TaskSpec(KubeModel):
    name: str | None = None
    replicas: int | None = Field(default=None, ge=0)
    min_available: int | None = Field(default=None, ge=0)
    max_retry: int | None = Field(default=None, ge=0)
    template: dict[str, Any] = Field(default_factory=dict, json_schema_extra=POD_TEMPLATE)
    policies: list[LifecyclePolicy] | None = None
    depends_on: DependsOn | None = None
    topology_policy: str | None = Field(
        default=None, json_schema_extra={"enum": list(TOPOLOGY_POLICIES)}
    )
    min_replicas: int | None = Field(default=None, ge=1)
    max_replicas: int | None = Field(default=None, ge=1)
    partition_policy: PartitionPolicy | None = None

    @property
    def replica_count(self) -> int:
        return self.replicas or 0

    @property
    def is_elastic(self) -> bool:
        return (
            self.min_replicas is not None
            and self.max_replicas is not None
            and self.min_replicas < self.max_replicas
        )


class VolumeSpec(KubeModel):
    mount_path: str
    volume_claim_name: str | None = None
    volume_claim: dict[str, Any] | None = Field(default=None, json_schema_extra=PVC_SPEC)


class SuccessPolicyRule(KubeModel):
    task_name: str | None = None
    succeeded_indexes: str | None = Field(default=None, max_length=64 * 1024)
    succeeded_count: int | None = None


class SuccessPolicy(KubeModel):
    rules: list[SuccessPolicyRule] = Field(default_factory=list, min_length=1, max_length=20)


class JobSpec(KubeModel):
    scheduler_name: str | None = None
    min_available: int | None = Field(default=None, ge=0)
    min_success: int | None = Field(default=None, ge=1)
    volumes: list[VolumeSpec] | None = None
    # minItems in the CRD, as Volcano's; the model still reads an empty list so that the webhook
    # can name the problem.
    tasks: list[TaskSpec] = Field(default_factory=list, json_schema_extra={"minItems": 1})
    policies: list[LifecyclePolicy] | None = None
    plugins: dict[str, list[str]] | None = None
    queue: str | None = None
    max_retry: int | None = Field(default=None, ge=0)
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)
    priority_class_name: str | None = None
    success_policy: SuccessPolicy | None = None
    network_topology: NetworkTopology | None = None
    # A duration string (Go's time.ParseDuration form); stored only, as in Volcano.
    running_estimate: str | None = None
    # Not in Volcano: a suspended job has no pods (absent means false, so the mutating webhook
    # can tell "not set" from "false" when Kueue's queue-name label asks for a suspended start).
    suspend: bool | None = None
    # Not in Volcano: the controller that manages the job; vcjob leaves alone a job whose
    # managedBy names another controller (immutable, like the Kubernetes Job's).
    managed_by: str | None = Field(default=None, max_length=63)

    @property
    def total_replicas(self) -> int:
        return sum(t.replica_count for t in self.tasks)


class JobState(KubeModel):
    phase: str | None = Field(default=None, json_schema_extra={"enum": [p.value for p in JobPhase]})
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class TaskState(KubeModel):
    phase: dict[str, int] | None = None


class JobCondition(KubeModel):
    status: str
    last_transition_time: str | None = None


class TypedCondition(KubeModel):
    """A metav1.Condition: one entry per type (`Suspended`, ...)."""

    type: str
    status: str = Field(json_schema_extra={"enum": ["True", "False", "Unknown"]})
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


class JobStatus(KubeModel):
    state: JobState = Field(default_factory=JobState)
    min_available: int | None = None
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    retry_count: int = 0
    running_duration: str | None = None
    task_status_count: dict[str, TaskState] | None = None
    succeeded_indexes: dict[str, str] | None = None
    controlled_resources: dict[str, str] | None = None
    conditions: list[JobCondition] | None = None
    typed_conditions: list[TypedCondition] | None = None


class Job(KubeObject):
    api_version: str | None = labels.BATCH_API_VERSION
    kind: str | None = labels.JOB_KIND
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus | None = None

    def task(self, name: str) -> TaskSpec | None:
        return next((t for t in self.spec.tasks if t.name == name), None)
