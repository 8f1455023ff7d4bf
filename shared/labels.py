"""Names, labels and annotations shared with Volcano (wire compatibility is a feature)."""

from __future__ import annotations

from typing import Final

BATCH_GROUP: Final = "batch.volcano.sh"
BATCH_VERSION: Final = "v1alpha1"
BATCH_API_VERSION: Final = f"{BATCH_GROUP}/{BATCH_VERSION}"
BUS_GROUP: Final = "bus.volcano.sh"
BUS_VERSION: Final = "v1alpha1"
BUS_API_VERSION: Final = f"{BUS_GROUP}/{BUS_VERSION}"
SCHEDULING_GROUP: Final = "scheduling.volcano.sh"
SCHEDULING_VERSION: Final = "v1beta1"
SCHEDULING_API_VERSION: Final = f"{SCHEDULING_GROUP}/{SCHEDULING_VERSION}"

JOB_KIND: Final = "Job"
COMMAND_KIND: Final = "Command"
PODGROUP_KIND: Final = "PodGroup"
QUEUE_KIND: Final = "Queue"

JOB_NAME_KEY: Final = "volcano.sh/job-name"
JOB_NAMESPACE_KEY: Final = "volcano.sh/job-namespace"
TASK_SPEC_KEY: Final = "volcano.sh/task-spec"
TASK_INDEX_KEY: Final = "volcano.sh/task-index"
QUEUE_NAME_KEY: Final = "volcano.sh/queue-name"
JOB_VERSION_KEY: Final = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY: Final = "volcano.sh/job-retry-count"
TEMPLATE_UID_KEY: Final = "volcano.sh/template-uid"
POD_GROUP_KEY: Final = "scheduling.k8s.io/group-name"
OUT_OF_SYNC_KEY: Final = "volcano.sh/controller-out-of-sync"
# vcjob's own: the job's attempt (`status.attempts[].index`) a pod belongs to, as annotation and
# as the environment variable of its containers.
ATTEMPT_KEY: Final = "batch.vcjob.io/attempt"
ATTEMPT_ENV: Final = "VCJOB_ATTEMPT"

# Kueue: the LocalQueue a job is submitted to, and the value of spec.managedBy that is vcjob's own.
KUEUE_QUEUE_NAME_KEY: Final = "kueue.x-k8s.io/queue-name"
MANAGED_BY_VCJOB: Final = "batch.volcano.sh/job-controller"
# Kueue's MultiKueue: the managedBy of a job it dispatches to a worker cluster, and the label its
# copy on the worker carries, naming the Workload MultiKueue created there for it.
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
KUEUE_PREBUILT_WORKLOAD_KEY: Final = "kueue.x-k8s.io/prebuilt-workload-name"

DEFAULT_QUEUE: Final = "default"
DEFAULT_SCHEDULER: Final = "volcano"
DEFAULT_MAX_RETRY: Final = 3
DEFAULT_TASK_PREFIX: Final = "default"
ROOT_QUEUE: Final = "root"

SIM_RUNTIME_KEY: Final = "sim.vcjob.io/runtime"
SIM_EXIT_CODE_KEY: Final = "sim.vcjob.io/exit-code"
SIM_FAIL_AFTER_KEY: Final = "sim.vcjob.io/fail-after"

MUTATE_PATH: Final = "/mutate-batch-volcano-sh-v1alpha1-job"
VALIDATE_PATH: Final = "/validate-batch-volcano-sh-v1alpha1-job"
MUTATING_WEBHOOK_NAME: Final = "mutatejob.vcjob.volcano.sh"
VALIDATING_WEBHOOK_NAME: Final = "validatejob.vcjob.volcano.sh"
CRONJOB_MUTATE_PATH: Final = "/mutate-batch-volcano-sh-v1alpha1-cronjob"
CRONJOB_VALIDATE_PATH: Final = "/validate-batch-volcano-sh-v1alpha1-cronjob"
CRONJOB_MUTATING_WEBHOOK_NAME: Final = "mutatecronjob.vcjob.volcano.sh"
CRONJOB_VALIDATING_WEBHOOK_NAME: Final = "validatecronjob.vcjob.volcano.sh"

# Volcano's other objects, at the paths of Volcano's webhook manager.
TOPOLOGY_GROUP: Final = "topology.volcano.sh"
TOPOLOGY_VERSION: Final = "v1alpha1"
QUEUE_MUTATE_PATH: Final = "/queues/mutate"
QUEUE_VALIDATE_PATH: Final = "/queues/validate"
PODGROUP_MUTATE_PATH: Final = "/podgroups/mutate"
PODGROUP_VALIDATE_PATH: Final = "/podgroups/validate"
POD_VALIDATE_PATH: Final = "/pods/validate"
POD_MUTATE_PATH: Final = "/pods/mutate"
HYPERNODE_VALIDATE_PATH: Final = "/hypernodes/validate"
QUEUE_MUTATING_WEBHOOK_NAME: Final = "mutatequeue.vcjob.volcano.sh"
QUEUE_VALIDATING_WEBHOOK_NAME: Final = "validatequeue.vcjob.volcano.sh"
PODGROUP_MUTATING_WEBHOOK_NAME: Final = "mutatepodgroup.vcjob.volcano.sh"
PODGROUP_VALIDATING_WEBHOOK_NAME: Final = "validatepodgroup.vcjob.volcano.sh"
POD_VALIDATING_WEBHOOK_NAME: Final = "validatepod.vcjob.volcano.sh"
POD_MUTATING_WEBHOOK_NAME: Final = "mutatepod.vcjob.volcano.sh"
# Volcano 1.15's SchedulingGatesQueueAdmission (alpha): a pod annotated with this key "true" is
# created with a scheduling gate of the same name, which the gang scheduler removes once the
# pod's queue has room for it, so that autoscalers never see it Unschedulable for want of quota.
QUEUE_ALLOCATION_GATE_KEY: Final = "scheduling.volcano.sh/queue-allocation-gate"
HYPERNODE_VALIDATING_WEBHOOK_NAME: Final = "validatehypernode.vcjob.volcano.sh"


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


def pod_group_name(job: str, uid: str) -> str:
    return f"{job}-{uid}"


def template_uid(job: str, task: str) -> str:
    return f"{job}-{task}"
