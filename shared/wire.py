"""Objects as vcjob's processes get them from the API server, and the accessors of the fields
several modules read.

Objects travel as plain JSON dicts (a pod template stays a dict, and so does a cached object); the
accessors read a field the same way everywhere, tolerating anything missing or of the wrong type,
as an object from the wire may be: a missing part reads as its empty value. What they return is
typed by the views of `shared.wiretypes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from shared.wiretypes import (
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    JobState,
    JobStatus,
    ObjectMeta,
    OwnerReference,
    PodGroupSpec,
    PodGroupStatus,
    PodStatus,
    StatusCondition,
)

# An object as the API server sends it: JSON decoded into dicts and lists.
WireObject = dict[str, Any]

PENDING = "Pending"


def _object(value: Any) -> Mapping[str, Any]:
    # JSON gives dicts: the plain check first, the (slower) abstract one for other mappings.
    if isinstance(value, dict):
        return value
    return value if isinstance(value, Mapping) else {}


def _dict(value: Any) -> dict[str, Any]:
    # The object's own dict (not a copy), so what it returns reads as the object does.
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def dig(obj: Mapping[str, Any] | None, *path: str) -> Any:
    """The value at `path` (keys of nested objects), for a deep field one module reads; None when
    a step is missing or not an object."""
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


# Metadata.


def metadata(obj: Mapping[str, Any] | None) -> ObjectMeta:
    """`metadata`, the object's own dict; {} when there is none."""
    return cast(ObjectMeta, _dict(_object(obj).get("metadata")))


def name_of(obj: Mapping[str, Any] | None) -> str:
    return str(metadata(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any] | None) -> str:
    return str(metadata(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any] | None) -> str:
    return str(metadata(obj).get("uid") or "")


def resource_version_of(obj: Mapping[str, Any] | None) -> str:
    return str(metadata(obj).get("resourceVersion") or "")


def generation_of(obj: Mapping[str, Any] | None) -> int | None:
    value = metadata(obj).get("generation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def labels_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    """A copy of the labels; {} when there are none."""
    return dict(_object(metadata(obj).get("labels")))


def annotations_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    """A copy of the annotations; {} when there are none."""
    return dict(_object(metadata(obj).get("annotations")))


def owner_references(obj: Mapping[str, Any] | None) -> list[OwnerReference]:
    return cast(list[OwnerReference], _dicts(metadata(obj).get("ownerReferences")))


def controller_ref(obj: Mapping[str, Any] | None) -> OwnerReference | None:
    """The owner reference that says `controller: true`, if any."""
    return next((ref for ref in owner_references(obj) if ref.get("controller") is True), None)


def controller_uid(obj: Mapping[str, Any] | None) -> str | None:
    """The uid of the controlling owner; None when nothing controls the object."""
    ref = controller_ref(obj)
    return None if ref is None else str(ref.get("uid") or "")


def creation_timestamp(obj: Mapping[str, Any] | None) -> str | None:
    value = metadata(obj).get("creationTimestamp")
    return str(value) if value else None


def deletion_timestamp(obj: Mapping[str, Any] | None) -> str | None:
    """Set once the API server is deleting the object (finalizers or a grace period hold it)."""
    value = metadata(obj).get("deletionTimestamp")
    return str(value) if value else None


# Spec and status.


def spec_of(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """`spec`, the object's own dict; {} when there is none."""
    return _dict(_object(obj).get("spec"))


def status_of(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """`status`, the object's own dict; {} when there is none."""
    return _dict(_object(obj).get("status"))


def status_phase(obj: Mapping[str, Any] | None) -> str:
    """`status.phase` (of a pod, a PodGroup, a node, a PVC); "" when there is none."""
    value = status_of(obj).get("phase")
    return str(value) if value else ""


def conditions_of(obj: Mapping[str, Any] | None) -> list[StatusCondition]:
    """`status.conditions`, the entries that are objects."""
    return cast(list[StatusCondition], _dicts(status_of(obj).get("conditions")))


def find_condition(obj: Mapping[str, Any] | None, type_: str) -> StatusCondition | None:
    """The first entry of `status.conditions` of that type."""
    return next((c for c in conditions_of(obj) if c.get("type") == type_), None)


# Pods.


def pod_status(pod: Mapping[str, Any] | None) -> PodStatus:
    return cast(PodStatus, status_of(pod))


def pod_phase(pod: Mapping[str, Any] | None) -> str:
    """The pod's phase; a pod the API server has not given a phase yet is Pending."""
    return status_phase(pod) or PENDING


def container_statuses(pod: Mapping[str, Any] | None) -> list[ContainerStatus]:
    """`status.containerStatuses` (the regular containers')."""
    return cast(list[ContainerStatus], _dicts(status_of(pod).get("containerStatuses")))


def init_container_statuses(pod: Mapping[str, Any] | None) -> list[ContainerStatus]:
    return cast(list[ContainerStatus], _dicts(status_of(pod).get("initContainerStatuses")))


def terminated_state(
    container: Mapping[str, Any], *, last: bool = False
) -> ContainerStateTerminated:
    """`state.terminated` of a container status (`lastState.terminated` with `last`); {} while
    the container has not terminated."""
    state = _object(container.get("lastState" if last else "state"))
    return cast(ContainerStateTerminated, _dict(state.get("terminated")))


def waiting_state(container: Mapping[str, Any]) -> ContainerStateWaiting:
    """`state.waiting` of a container status; {} when it is not waiting."""
    return cast(ContainerStateWaiting, _dict(_object(container.get("state")).get("waiting")))


# Volcano's Jobs (and JobFlows) and PodGroups.


def job_status(job: Mapping[str, Any] | None) -> JobStatus:
    return cast(JobStatus, status_of(job))


def job_state(job: Mapping[str, Any] | None) -> JobState:
    """`status.state` of a Volcano Job or JobFlow; {} when it has none yet."""
    return cast(JobState, _dict(status_of(job).get("state")))


def state_phase(status: Mapping[str, Any] | None) -> str:
    """`state.phase` of a Volcano status (a Job's or a JobFlow's); "" when there is none."""
    phase = _object(_object(status).get("state")).get("phase")
    return phase if isinstance(phase, str) else ""


def phase_of(obj: Mapping[str, Any]) -> str:
    """`status.state.phase` of a Volcano Job or JobFlow; "" when it has none yet."""
    return state_phase(_object(obj.get("status")))


def podgroup_spec(pod_group: Mapping[str, Any] | None) -> PodGroupSpec:
    return cast(PodGroupSpec, spec_of(pod_group))


def podgroup_status(pod_group: Mapping[str, Any] | None) -> PodGroupStatus:
    return cast(PodGroupStatus, status_of(pod_group))
