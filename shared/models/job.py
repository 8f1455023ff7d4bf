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
DNS_LABEL_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
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
    """What to do when the policy matches: AbortJob, RestartJob, RestartTask, RestartPod,
    RestartPartition, TerminateJob, CompleteJob or ResumeJob."""
    event: str | None = Field(default=None, json_schema_extra={"enum": list(CRD_EVENTS)})
    """The event that triggers the action: PodFailed, PodEvicted, PodPending, Unknown,
    TaskCompleted, TaskFailed, JobUpdated or * for any. Mutually exclusive with exitCode."""
    events: list[str] | None = Field(
        default=None,
        json_schema_extra={"items": {"type": "string", "enum": list(CRD_EVENTS)}},
    )
    """Several events that trigger the same action (merged with event)."""
    exit_code: int | None = None
    """The exit code of a failed container that triggers the action (not 0). Mutually exclusive with
    event and events."""
    timeout: str | None = None
    """How long the condition must last before the action is taken, as a Go duration (e.g. 10m)."""

    def event_list(self) -> list[str]:
        """`event` and `events` together, in order (Volcano merges them the same way)."""
        out = [self.event] if self.event else []
        out.extend(self.events or [])
        return out


class DependsOn(KubeModel):
    name: list[str] | None = None
    """The tasks this task waits for: its pods are created once each of them has minAvailable
    pods Succeeded or Running and Ready."""
    # No enum in the CRD (Volcano's has none); the webhook checks it.
    iteration: str | None = None
    """How several dependencies combine: all of them (the default) or any one of them."""


class NetworkTopology(KubeModel):
    """Hypernode tier constraint; `highestTierAllowed` and `highestTierName` are exclusive."""

    mode: str | None = Field(
        default=None, json_schema_extra={"enum": list(NETWORK_TOPOLOGY_MODES), "default": "hard"}
    )
    """hard: the pods must be placed within the allowed tier; soft: the scheduler tries to."""
    highest_tier_allowed: int | None = Field(default=None, json_schema_extra={"minimum": 0})
    """The highest tier of the HyperNode topology the pods may span."""
    highest_tier_name: str | None = Field(default=None, max_length=253)
    """The name of the highest HyperNode tier the pods may span (instead of highestTierAllowed)."""


class PartitionPolicy(KubeModel):
    """A task split into `totalPartitions` groups of `partitionSize` pods."""

    # Required in the CRD; optional here so the webhook can name what is missing.
    model_config = ConfigDict(json_schema_extra={"required": ["totalPartitions", "partitionSize"]})

    total_partitions: int | None = Field(default=None, json_schema_extra={"minimum": 1})
    """The number of partitions the task's pods are split into."""
    partition_size: int | None = Field(default=None, json_schema_extra={"minimum": 1})
    """The number of pods in each partition; totalPartitions x partitionSize equals replicas."""
    min_partitions: int | None = Field(default=None, json_schema_extra={"default": 0, "minimum": 0})
    """The number of partitions that must be schedulable for the task to start."""
    network_topology: NetworkTopology | None = None
    """The network topology constraint of each partition."""


class TaskSpec(KubeModel):
    # Schema-only bounds, as in Volcano's CRD (the API server refuses first, with its own
    # "should match" wording); the webhook's own checks give the detailed message.
    name: str | None = Field(
        default=None, json_schema_extra={"maxLength": 63, "pattern": DNS_LABEL_PATTERN}
    )
    """The task's name, unique in the job; pods are named <job>-<task>-<index>."""
    replicas: int | None = Field(default=None, ge=0)
    """The number of pods of the task."""
    min_available: int | None = Field(default=None, ge=0)
    """The pods of this task that must be schedulable together for the job to start (defaults to
    replicas)."""
    max_retry: int | None = Field(default=None, ge=0)
    """How many container restarts the task's running pods may add up to before the task fails."""
    template: dict[str, Any] = Field(default_factory=dict, json_schema_extra=POD_TEMPLATE)
    """The pod template of the task's pods."""
    policies: list[LifecyclePolicy] | None = None
    """Lifecycle policies of this task: an event or exit code and the action taken; they take
    precedence over the job's."""
    depends_on: DependsOn | None = None
    """Tasks whose pods must be ready before this task's pods are created."""
    topology_policy: str | None = Field(
        default=None, json_schema_extra={"enum": list(TOPOLOGY_POLICIES)}
    )
    """The NUMA topology policy of the task's pods: none, best-effort, restricted or
    single-numa-node."""
    min_replicas: int | None = Field(default=None, ge=1)
    """The fewest pods the elastic autoscaler may shrink the task to."""
    max_replicas: int | None = Field(default=None, ge=1)
    """The most pods the elastic autoscaler may grow the task to."""
    partition_policy: PartitionPolicy | None = None
    """Splits the task's pods into partitions scheduled and restarted as units."""

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
    mount_path: str = Field(json_schema_extra={"minLength": 1, "pattern": "^[^:]+$"})
    """Where the volume is mounted in the containers (not the init containers) of the job's pods."""
    volume_claim_name: str | None = None
    """The PersistentVolumeClaim to mount; written by the controller when the claim is created from
    volumeClaim."""
    volume_claim: dict[str, Any] | None = Field(default=None, json_schema_extra=PVC_SPEC)
    """The spec of a PersistentVolumeClaim the controller creates for the job (named
    <job>-pvc-<random>) and deletes with it."""


class SuccessPolicyRule(KubeModel):
    task_name: str | None = None
    """The task the rule is about."""
    succeeded_indexes: str | None = Field(default=None, max_length=64 * 1024)
    """Pod indexes that must succeed, as ranges such as 0-3,7."""
    succeeded_count: int | None = None
    """The number of pods of the task (or of succeededIndexes) that must succeed."""


class SuccessPolicy(KubeModel):
    rules: list[SuccessPolicyRule] = Field(default_factory=list, min_length=1, max_length=20)
    """The job succeeds as soon as one rule is met; its remaining pods are then terminated."""


class RetryBackoff(KubeModel):
    """Exponential backoff before a restarted job's pods are recreated (seconds)."""

    base_seconds: int = Field(default=10, ge=1)
    """The wait before the first restart's pods; it doubles with each restart."""
    cap_seconds: int = Field(default=300, ge=1)
    """The longest wait between restarts."""


class RetryPolicy(KubeModel):
    """Retry budgets by cause and backoff between restarts (vcjob, not in Volcano)."""

    infrastructure_retries: int | None = Field(default=None, ge=0)
    """Restarts allowed for infrastructure causes before the job fails; unset, they count
    against maxRetry as in Volcano."""
    backoff: RetryBackoff | None = None
    """Exponential backoff with jitter between restarts; unset, pods are recreated at once."""


class JobSpec(KubeModel):
    """What the job runs: tasks, gang size, policies, plugins, queue."""

    scheduler_name: str | None = None
    """The scheduler of the job's pods (volcano by default)."""
    min_available: int | None = Field(default=None, ge=0)
    """The pods that must be schedulable together for the job to start: the gang size (defaults to
    the sum of the tasks' minAvailable)."""
    min_success: int | None = Field(default=None, ge=1)
    """The number of pods that must succeed for the job to complete."""
    volumes: list[VolumeSpec] | None = None
    """PersistentVolumeClaims mounted into the containers of every pod of the job."""
    # minItems in the CRD, as Volcano's; the model still reads an empty list so that the webhook
    # can name the problem.
    tasks: list[TaskSpec] = Field(default_factory=list, json_schema_extra={"minItems": 1})
    """The job's tasks: groups of identical pods made from one template."""
    policies: list[LifecyclePolicy] | None = None
    """Lifecycle policies of the job: an event or exit code and the action taken."""
    plugins: dict[str, list[str]] | None = None
    """Plugins and their arguments (env, svc, ssh, tensorflow, pytorch, mpi, ray, hcclrank): they
    add environment, Services, keys and configuration to the pods."""
    queue: str | None = None
    """The Queue the job's PodGroup is scheduled from (default by default)."""
    max_retry: int | None = Field(default=None, ge=0)
    """How many times the job may be restarted before it fails (3 by default)."""
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)
    """Seconds after the job finishes before it is deleted; unset keeps it."""
    priority_class_name: str | None = None
    """The PriorityClass of the job's PodGroup and pods."""
    success_policy: SuccessPolicy | None = None
    """When the job succeeds before all its pods have: rules on tasks and pod indexes (KEP-3998)."""
    network_topology: NetworkTopology | None = None
    """The network topology constraint of the whole job (HyperNode tiers)."""
    # A duration string (Go's time.ParseDuration form); stored only, as in Volcano.
    running_estimate: str | None = None
    """The expected running time of the job, as a Go duration; stored for schedulers."""
    # Not in Volcano: a suspended job has no pods (absent means false, so the mutating webhook
    # can tell "not set" from "false" when Kueue's queue-name label asks for a suspended start).
    suspend: bool | None = None
    """True: the job runs no pods; its retry count and finished pods are kept, and it resumes the
    same attempt when set back to false (vcjob, not in Volcano; Kueue sets it)."""
    # Not in Volcano: the controller that manages the job; vcjob leaves alone a job whose
    # managedBy names another controller (immutable, like the Kubernetes Job's).
    managed_by: str | None = Field(default=None, max_length=63)
    """The controller that manages the job; any value but batch.volcano.sh/job-controller makes
    vcjob leave the job alone (immutable; vcjob, not in Volcano)."""
    # vcjob's lifecycle extensions (docs/lifecycle.md); unset, the job behaves as in Volcano.
    active_deadline_seconds: int | None = Field(default=None, ge=1)
    """Seconds the job may run, counted from its first Running and without time suspended; then
    it fails with reason DeadlineExceeded (vcjob, not in Volcano)."""
    retry_policy: RetryPolicy | None = None
    """A budget of restarts for infrastructure causes (evictions, preemptions, lost nodes) apart
    from maxRetry, and backoff between restarts (vcjob, not in Volcano)."""

    @property
    def total_replicas(self) -> int:
        return sum(t.replica_count for t in self.tasks)


class JobState(KubeModel):
    phase: str | None = Field(default=None, json_schema_extra={"enum": [p.value for p in JobPhase]})
    """The job's phase: Pending, Running, Restarting, Completing, Completed, Aborting, Aborted,
    Terminating, Terminated or Failed."""
    reason: str | None = None
    """Why the job is in this phase, in one word."""
    message: str | None = None
    """Why the job is in this phase, for people."""
    last_transition_time: str | None = None
    """When the job last changed phase."""


class TaskState(KubeModel):
    phase: dict[str, int] | None = None
    """The task's pods by pod phase."""


class JobCondition(KubeModel):
    status: str
    """The phase the job entered."""
    last_transition_time: str | None = None
    """When the job entered it."""


class TypedCondition(KubeModel):
    """metav1.Condition: `status.typedConditions` beside Volcano's `conditions`."""

    type: str
    """The condition's type: Admitted, Running, Blocked, Suspended, Complete or Failed."""
    status: str = Field(json_schema_extra={"enum": ["True", "False", "Unknown"]})
    """True, False or Unknown."""
    reason: str | None = None
    """Why, in one CamelCase word (QueueClosed, MissingPVC, DeadlineExceeded ...)."""
    message: str | None = None
    """Why, for people."""
    last_transition_time: str | None = None
    """When the status last changed."""
    observed_generation: int | None = None
    """The job's metadata.generation the condition was set for."""


class RestartCounts(KubeModel):
    """Restarts carried out, by cause (docs/lifecycle.md)."""

    application: int = 0
    """Restarts after a container's exit code or failure (counted against maxRetry)."""
    infrastructure: int = 0
    """Restarts after an eviction, preemption, lost node or PodGroup Unknown."""
    operator: int = 0
    """Restarts asked for by a command, a suspension or a spec edit (never counted)."""


class FailedPod(KubeModel):
    name: str
    """The pod's name."""
    exit_code: int | None = None
    """Its first failed container's exit code."""
    reason: str | None = None
    """Why it failed (the container's or the pod's reason)."""


class Attempt(KubeModel):
    """One run of the job between restarts; `cause` says why it ended in a restart."""

    index: int
    """The attempt's number, from 0 (also in each pod's annotation and VCJOB_ATTEMPT)."""
    start_time: str | None = None
    """When the attempt began."""
    end_time: str | None = None
    """When it ended."""
    cause: str | None = None
    """Why it ended: Application, Infrastructure or Operator."""
    reason: str | None = None
    """The event or reason that ended it."""
    backoff_seconds: float | None = None
    """The wait before the next attempt's pods."""
    failed_pods: list[FailedPod] | None = None
    """The pods that failed in it, with their exit codes."""


class JobStatus(KubeModel):
    state: JobState = Field(default_factory=JobState)
    """The job's phase and why."""
    min_available: int | None = None
    """The gang size the job was started with."""
    pending: int = 0
    """Pods of the job that are Pending."""
    running: int = 0
    """Pods of the job that are Running."""
    succeeded: int = 0
    """Pods of the job that Succeeded."""
    failed: int = 0
    """Pods of the job that Failed."""
    terminating: int = 0
    """Pods of the job being deleted."""
    unknown: int = 0
    """Pods of the job whose phase is Unknown."""
    version: int = 0
    """Incremented at every restart; pods carry the version they were created for."""
    retry_count: int = 0
    """How many times the job has been restarted."""
    running_duration: str | None = None
    """How long the job has been running."""
    task_status_count: dict[str, TaskState] | None = None
    """Each task's pods by pod phase."""
    succeeded_indexes: dict[str, str] | None = None
    """Each task's succeeded pod indexes, as ranges such as 0-3,7."""
    controlled_resources: dict[str, str] | None = None
    """Objects the controller created for the job (plugins' Services, Secrets and ConfigMaps, PVCs)
    and what it remembers between reconciles."""
    conditions: list[JobCondition] | None = None
    """The phases the job went through, with when."""
    # vcjob's lifecycle extensions (docs/lifecycle.md).
    start_time: str | None = None
    """When the job first ran: the start of its activeDeadlineSeconds."""
    suspended_seconds: int | None = None
    """Seconds the job spent suspended since it first ran (not counted against its deadline)."""
    suspended_since: str | None = None
    """When the job's current suspension began."""
    restart_counts: RestartCounts | None = None
    """Restarts carried out, by cause: application, infrastructure, operator."""
    attempts: list[Attempt] | None = None
    """The latest runs of the job between restarts (bounded), with why each ended."""
    typed_conditions: list[TypedCondition] | None = None
    """Conditions in metav1.Condition form (Admitted, Running, Blocked, Suspended, Complete,
    Failed) beside Volcano's conditions."""
    reason: str | None = None
    """Why the job is Pending, Blocked or Failed, in one word (the REASON column)."""


class Job(KubeObject):
    """A Volcano batch Job: tasks of pods scheduled as one gang, with lifecycle policies and
    plugins."""

    api_version: str | None = labels.BATCH_API_VERSION
    kind: str | None = labels.JOB_KIND
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus | None = None
    """What the controller observed and decided: phase, pod counts, retries."""

    def task(self, name: str) -> TaskSpec | None:
        return next((t for t in self.spec.tasks if t.name == name), None)
