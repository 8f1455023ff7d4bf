"""Read-only views of pod wire dicts: phase, task, index, version, exit code, restarts; and
`JobPod`, a job's pod read once per reconcile."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared import labels

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
UNKNOWN = "Unknown"
FINISHED_POD_PHASES = frozenset({SUCCEEDED, FAILED})


def metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("name") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("uid") or "")


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(metadata(obj).get("labels") or {})


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(metadata(obj).get("annotations") or {})


def phase(pod: Mapping[str, Any]) -> str:
    """The pod phase; a pod the API server has not given a phase yet is Pending."""
    return str((pod.get("status") or {}).get("phase") or PENDING)


def is_deleting(pod: Mapping[str, Any]) -> bool:
    return bool(metadata(pod).get("deletionTimestamp"))


def is_out_of_sync(pod: Mapping[str, Any]) -> bool:
    return annotations_of(pod).get(labels.OUT_OF_SYNC_KEY) == "true"


def is_finished(pod: Mapping[str, Any]) -> bool:
    return phase(pod) in FINISHED_POD_PHASES


def task_of(pod: Mapping[str, Any]) -> str | None:
    task = labels_of(pod).get(labels.TASK_SPEC_KEY) or annotations_of(pod).get(labels.TASK_SPEC_KEY)
    return str(task) if task else None


def index_of(pod: Mapping[str, Any]) -> int | None:
    """The task index from the label (or annotation), else the last `-` segment of the name."""
    raw = labels_of(pod).get(labels.TASK_INDEX_KEY) or annotations_of(pod).get(
        labels.TASK_INDEX_KEY
    )
    if raw is None:
        raw = name_of(pod).rsplit("-", 1)[-1]
    try:
        return int(raw)
    except ValueError:
        return None


def version_of(pod: Mapping[str, Any]) -> int:
    try:
        return int(annotations_of(pod).get(labels.JOB_VERSION_KEY) or 0)
    except ValueError:
        return 0


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in metadata(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return None


def failed_exit_code(pod: Mapping[str, Any]) -> int | None:
    """Exit code of the first container (regular, then init) that terminated non-zero."""
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for container in status.get(key) or []:
            terminated = (container.get("state") or {}).get("terminated") or {}
            code = terminated.get("exitCode")
            if isinstance(code, int) and code != 0:
                return code
    return None


def restart_count(pod: Mapping[str, Any]) -> int:
    status = pod.get("status") or {}
    return sum(
        int(c.get("restartCount") or 0)
        for key in ("containerStatuses", "initContainerStatuses")
        for c in status.get(key) or []
    )


def all_containers_ready(pod: Mapping[str, Any]) -> bool:
    """Every container reports ready; no statuses yet counts as ready (as Volcano does)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return all(bool(c.get("ready")) for c in statuses)


def creation_timestamp(obj: Mapping[str, Any]) -> str | None:
    value = metadata(obj).get("creationTimestamp")
    return str(value) if value else None


@dataclass(frozen=True, slots=True)
class JobPod:
    """One of a job's pods, read once per reconcile: what the planner asks of a pod again and
    again, and the pod as read (`wire`) for the rules that look further (exit codes,
    restarts, conditions)."""

    wire: Mapping[str, Any]
    name: str
    uid: str | None
    task: str | None
    index: int | None
    phase: str
    version: int
    # The API server is deleting it (not: this plan deletes it).
    deleting: bool
    # Marked by a restart or scale-down of ours before its deletion.
    out_of_sync: bool

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_POD_PHASES


def read(pod: Mapping[str, Any]) -> JobPod:
    return JobPod(
        wire=pod,
        name=name_of(pod),
        uid=uid_of(pod) or None,
        task=task_of(pod),
        index=index_of(pod),
        phase=phase(pod),
        version=version_of(pod),
        deleting=is_deleting(pod),
        out_of_sync=is_out_of_sync(pod),
    )
