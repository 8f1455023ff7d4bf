"""Read-only views of pod wire dicts: phase, task, index, version, exit code, restarts; and
`JobPod`, a job's pod read once per reconcile."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared import labels
from shared.wire import (
    WireObject,
    container_statuses,
    deletion_timestamp,
    init_container_statuses,
    pod_phase,
    terminated_state,
)

# The generic metadata accessors live in `shared.wire`; their names here keep this module the one
# import of the planner's pod rules.
from shared.wire import annotations_of as annotations_of
from shared.wire import controller_uid as controller_uid
from shared.wire import creation_timestamp as creation_timestamp
from shared.wire import labels_of as labels_of
from shared.wire import metadata as metadata
from shared.wire import name_of as name_of
from shared.wire import uid_of as uid_of

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
UNKNOWN = "Unknown"
FINISHED_POD_PHASES = frozenset({SUCCEEDED, FAILED})


def phase(pod: Mapping[str, Any]) -> str:
    """The pod phase; a pod the API server has not given a phase yet is Pending."""
    return pod_phase(pod)


def is_deleting(pod: Mapping[str, Any]) -> bool:
    return deletion_timestamp(pod) is not None


def is_out_of_sync(pod: Mapping[str, Any]) -> bool:
    return _out_of_sync(annotations_of(pod))


def task_of(pod: Mapping[str, Any]) -> str | None:
    return _task(labels_of(pod), annotations_of(pod))


def index_of(pod: Mapping[str, Any]) -> int | None:
    """The task index from the label (or annotation), else the last `-` segment of the name."""
    return _index(labels_of(pod), annotations_of(pod), name_of(pod))


def version_of(pod: Mapping[str, Any]) -> int:
    return _version(annotations_of(pod))


# The rules above, over labels and annotations already looked up (`read` looks them up once).


def _out_of_sync(notes: Mapping[str, Any]) -> bool:
    return notes.get(labels.OUT_OF_SYNC_KEY) == "true"


def _task(pod_labels: Mapping[str, Any], notes: Mapping[str, Any]) -> str | None:
    task = pod_labels.get(labels.TASK_SPEC_KEY) or notes.get(labels.TASK_SPEC_KEY)
    return str(task) if task else None


def _index(pod_labels: Mapping[str, Any], notes: Mapping[str, Any], name: str) -> int | None:
    raw = pod_labels.get(labels.TASK_INDEX_KEY) or notes.get(labels.TASK_INDEX_KEY)
    return _int_or_none(name.rsplit("-", 1)[-1] if raw is None else raw)


def _version(notes: Mapping[str, Any]) -> int:
    return _int_or_none(notes.get(labels.JOB_VERSION_KEY) or 0) or 0


def failed_exit_code(pod: Mapping[str, Any]) -> int | None:
    """Exit code of the first container (regular, then init) that terminated non-zero."""
    for container in [*container_statuses(pod), *init_container_statuses(pod)]:
        code = terminated_state(container).get("exitCode")
        if isinstance(code, int) and code != 0:
            return code
    return None


def restart_count(pod: Mapping[str, Any]) -> int:
    return sum(
        int(c.get("restartCount") or 0)
        for c in [*container_statuses(pod), *init_container_statuses(pod)]
    )


def all_containers_ready(pod: Mapping[str, Any]) -> bool:
    """Every container reports ready; no statuses yet counts as ready (as Volcano does)."""
    return all(bool(c.get("ready")) for c in container_statuses(pod))


@dataclass(frozen=True, slots=True)
class JobPod:
    """One of a job's pods, read once per reconcile: what the planner asks of a pod again and
    again, and the pod as read (`wire`) for the rules that look further (exit codes,
    restarts, conditions)."""

    wire: WireObject
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
    # Container restarts, init containers' included.
    restarts: int
    # Whose it is: the controlling owner's uid, else the job-name label (a pod of Volcano's
    # controller made before owner references, say).
    owner_uid: str | None
    job_label: str | None

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_POD_PHASES


def read(pod: WireObject) -> JobPod:
    """The pod's metadata, labels and annotations are looked up once (this runs for every pod
    of every reconcile), then read by the same rules as the accessors above."""
    meta = metadata(pod)
    pod_labels = meta.get("labels")
    pod_labels = pod_labels if isinstance(pod_labels, dict) else {}
    notes = meta.get("annotations")
    notes = notes if isinstance(notes, dict) else {}
    name = str(meta.get("name") or "")
    return JobPod(
        wire=pod,
        name=name,
        uid=str(meta.get("uid") or "") or None,
        task=_task(pod_labels, notes),
        index=_index(pod_labels, notes, name),
        phase=phase(pod),
        version=_version(notes),
        deleting=bool(meta.get("deletionTimestamp")),
        out_of_sync=_out_of_sync(notes),
        restarts=restart_count(pod),
        owner_uid=controller_uid(pod),
        job_label=pod_labels.get(labels.JOB_NAME_KEY),
    )


def _int_or_none(raw: Any) -> int | None:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None
