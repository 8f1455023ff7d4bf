"""The shapes of the wire objects vcjob's processes read, as `TypedDict`s (`total=False`: the
API server omits empty fields, and an object from the wire may lack anything).

These describe what is read, not what is written: a field not listed here is still there in the
dict and is carried along unchanged. They are views over the decoded JSON, never validated; the
accessors of `shared.wire` read them tolerating a part that is missing or of the wrong type.
"""

from __future__ import annotations

from typing import Any, TypedDict


class OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    managedFields: list[dict[str, Any]]


class StatusCondition(TypedDict, total=False):
    """An entry of `status.conditions` (a pod's, a PodGroup's, a Workload's, a node's)."""

    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    lastProbeTime: str
    observedGeneration: int


class ContainerStateWaiting(TypedDict, total=False):
    reason: str
    message: str


class ContainerStateRunning(TypedDict, total=False):
    startedAt: str


class ContainerStateTerminated(TypedDict, total=False):
    exitCode: int
    signal: int
    reason: str
    message: str
    startedAt: str
    finishedAt: str


class ContainerState(TypedDict, total=False):
    waiting: ContainerStateWaiting
    running: ContainerStateRunning
    terminated: ContainerStateTerminated


class ContainerStatus(TypedDict, total=False):
    name: str
    image: str
    ready: bool
    started: bool
    restartCount: int
    state: ContainerState
    lastState: ContainerState


class PodStatus(TypedDict, total=False):
    phase: str
    reason: str
    message: str
    startTime: str
    qosClass: str
    conditions: list[StatusCondition]
    containerStatuses: list[ContainerStatus]
    initContainerStatuses: list[ContainerStatus]


class Pod(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    # The pod spec stays a plain dict, as a pod template does.
    spec: dict[str, Any]
    status: PodStatus


class JobState(TypedDict, total=False):
    """`status.state` of a Volcano Job (and of a JobFlow)."""

    phase: str
    reason: str
    message: str
    lastTransitionTime: str


class JobStatus(TypedDict, total=False):
    """A Volcano Job's status as read from the wire (`shared.models.JobStatus` is the model)."""

    state: JobState
    minAvailable: int
    pending: int
    running: int
    succeeded: int
    failed: int
    terminating: int
    unknown: int
    version: int
    retryCount: int
    runningDuration: str
    taskStatusCount: dict[str, Any]
    controlledResources: dict[str, str]
    conditions: list[dict[str, Any]]


class PodGroupSpec(TypedDict, total=False):
    minMember: int
    minTaskMember: dict[str, int]
    minResources: dict[str, Any]
    queue: str
    priorityClassName: str


class PodGroupStatus(TypedDict, total=False):
    phase: str
    conditions: list[StatusCondition]
    running: int
    succeeded: int
    failed: int


class PodGroup(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: PodGroupSpec
    status: PodGroupStatus
