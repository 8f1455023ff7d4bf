"""`controller.job.decide.podview.read`: a job's pod read once per reconcile."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.decide import podview
from shared import labels


def wire(
    name: str = "j-w-1",
    *,
    task_label: str | None = "w",
    index_label: str | None = "1",
    phase: str | None = "Running",
    version: str | None = "2",
    deleting: bool = False,
    out_of_sync: bool = False,
    uid: str = "u1",
) -> dict[str, Any]:
    pod_labels = {}
    if task_label is not None:
        pod_labels[labels.TASK_SPEC_KEY] = task_label
    if index_label is not None:
        pod_labels[labels.TASK_INDEX_KEY] = index_label
    annotations = {}
    if version is not None:
        annotations[labels.JOB_VERSION_KEY] = version
    if out_of_sync:
        annotations[labels.OUT_OF_SYNC_KEY] = "true"
    meta: dict[str, Any] = {
        "name": name,
        "uid": uid,
        "labels": pod_labels,
        "annotations": annotations,
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase} if phase else {}}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (wire(), ("j-w-1", "u1", "w", 1, "Running", 2, False, False, False)),
        # no phase yet: Pending; no index label: the name's last segment
        (
            wire("j-w-7", index_label=None, phase=None),
            ("j-w-7", "u1", "w", 7, "Pending", 2, False, False, False),
        ),
        # no version annotation: 0; no uid: None
        (
            wire(version=None, uid="", phase="Succeeded"),
            ("j-w-1", None, "w", 1, "Succeeded", 0, False, False, True),
        ),
        (
            wire(deleting=True, out_of_sync=True, phase="Failed"),
            ("j-w-1", "u1", "w", 1, "Failed", 2, True, True, True),
        ),
        (
            wire("odd", task_label=None, index_label=None),
            ("odd", "u1", None, None, "Running", 2, False, False, False),
        ),
    ],
)
def test_a_pod_is_read_once_into_what_the_planner_asks(
    pod: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    read = podview.read(pod)
    assert (
        read.name,
        read.uid,
        read.task,
        read.index,
        read.phase,
        read.version,
        read.deleting,
        read.out_of_sync,
        read.finished,
    ) == expected
    assert read.wire is pod


def test_restarts_count_the_init_containers_too() -> None:
    pod = wire()
    pod["status"]["containerStatuses"] = [{"restartCount": 2}, {"restartCount": 1}]
    pod["status"]["initContainerStatuses"] = [{"restartCount": 1}]
    assert podview.read(pod).restarts == 4
    assert podview.read(wire()).restarts == 0


def test_a_pod_says_whose_it_is() -> None:
    pod = wire()
    pod["metadata"]["labels"][labels.JOB_NAME_KEY] = "j"
    assert (podview.read(pod).owner_uid, podview.read(pod).job_label) == (None, "j")
    pod["metadata"]["ownerReferences"] = [{"uid": "job-uid", "controller": True}]
    assert podview.read(pod).owner_uid == "job-uid"
