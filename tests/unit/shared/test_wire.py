"""The wire accessors: what they read, and what they make of an object missing a part."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared.wire import (
    annotations_of,
    conditions_of,
    container_statuses,
    controller_ref,
    controller_uid,
    creation_timestamp,
    deletion_timestamp,
    dig,
    find_condition,
    generation_of,
    init_container_statuses,
    job_state,
    job_status,
    labels_of,
    metadata,
    name_of,
    namespace_of,
    owner_references,
    phase_of,
    pod_phase,
    pod_status,
    podgroup_spec,
    podgroup_status,
    resource_version_of,
    spec_of,
    state_phase,
    status_of,
    status_phase,
    terminated_state,
    uid_of,
    waiting_state,
)


@pytest.mark.parametrize(
    ("obj", "phase"),
    [
        ({"status": {"state": {"phase": "Running"}}}, "Running"),
        ({"status": {"state": {}}}, ""),
        ({"status": {"state": None}}, ""),
        ({"status": None}, ""),
        ({}, ""),
        ({"status": {"state": {"phase": 3}}}, ""),
        ({"status": "broken"}, ""),
    ],
)
def test_phase_of(obj: dict[str, Any], phase: str) -> None:
    assert phase_of(obj) == phase
    assert state_phase(obj.get("status") if isinstance(obj.get("status"), dict) else None) == phase


POD: dict[str, Any] = {
    "metadata": {
        "name": "j-w-0",
        "namespace": "ns",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "labels": {"volcano.sh/job-name": "j"},
        "annotations": {"a": "b"},
        "ownerReferences": [
            {"kind": "PodGroup", "uid": "pg", "controller": False},
            "not an object",
            {"kind": "Job", "uid": "job-uid", "controller": True},
        ],
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "deletionTimestamp": "2024-01-01T00:01:00Z",
    },
    "spec": {"schedulerName": "volcano"},
    "status": {
        "phase": "Failed",
        "conditions": [{"type": "PodScheduled", "status": "True"}, None],
        "containerStatuses": [
            {"name": "main", "state": {"terminated": {"exitCode": 2}}, "restartCount": 1},
            {"name": "side", "state": {"waiting": {"reason": "ErrImagePull"}}},
        ],
        "initContainerStatuses": [
            {"name": "init", "lastState": {"terminated": {"finishedAt": "2024-01-01T00:00:30Z"}}}
        ],
    },
}

# Every way an object can lack a part: each reads as the part's empty value.
NO_PARTS: list[dict[str, Any] | None] = [
    None,
    {},
    {"metadata": None, "spec": None, "status": None},
    {"metadata": "x", "spec": [], "status": 3},
]
EMPTY_PARTS: list[dict[str, Any]] = [
    {"metadata": {"labels": None, "annotations": None, "ownerReferences": None}, "status": {}},
    {"metadata": {"labels": [], "ownerReferences": "x"}, "status": {"conditions": {}}},
    {"status": {"containerStatuses": None, "initContainerStatuses": "x", "phase": None}},
]


@pytest.mark.parametrize(
    ("read", "value"),
    [
        (metadata, POD["metadata"]),
        (name_of, "j-w-0"),
        (namespace_of, "ns"),
        (uid_of, "u-1"),
        (resource_version_of, "42"),
        (generation_of, 3),
        (labels_of, {"volcano.sh/job-name": "j"}),
        (annotations_of, {"a": "b"}),
        (
            owner_references,
            [
                {"kind": "PodGroup", "uid": "pg", "controller": False},
                {"kind": "Job", "uid": "job-uid", "controller": True},
            ],
        ),
        (controller_ref, {"kind": "Job", "uid": "job-uid", "controller": True}),
        (controller_uid, "job-uid"),
        (creation_timestamp, "2024-01-01T00:00:00Z"),
        (deletion_timestamp, "2024-01-01T00:01:00Z"),
        (spec_of, {"schedulerName": "volcano"}),
        (status_phase, "Failed"),
        (pod_phase, "Failed"),
        (conditions_of, [{"type": "PodScheduled", "status": "True"}]),
        (
            lambda o: find_condition(o, "PodScheduled"),
            {"type": "PodScheduled", "status": "True"},
        ),
        (lambda o: find_condition(o, "Ready"), None),
        (lambda o: [c.get("name") for c in container_statuses(o)], ["main", "side"]),
        (lambda o: [c.get("name") for c in init_container_statuses(o)], ["init"]),
    ],
)
def test_accessors_read_the_field(read: Callable[[Any], Any], value: Any) -> None:
    assert read(POD) == value


FIELDS_EMPTY: list[tuple[Callable[[Any], Any], Any]] = [
    (name_of, ""),
    (namespace_of, ""),
    (uid_of, ""),
    (resource_version_of, ""),
    (generation_of, None),
    (labels_of, {}),
    (annotations_of, {}),
    (owner_references, []),
    (controller_ref, None),
    (controller_uid, None),
    (creation_timestamp, None),
    (deletion_timestamp, None),
    (status_phase, ""),
    # A pod the API server has not given a phase yet is Pending.
    (pod_phase, "Pending"),
    (conditions_of, []),
    (container_statuses, []),
    (init_container_statuses, []),
    (job_state, {}),
]
PARTS_EMPTY: list[tuple[Callable[[Any], Any], Any]] = [
    (metadata, {}),
    (spec_of, {}),
    (status_of, {}),
    (pod_status, {}),
    (job_status, {}),
    (podgroup_spec, {}),
    (podgroup_status, {}),
]


@pytest.mark.parametrize("obj", NO_PARTS)
@pytest.mark.parametrize(("read", "empty"), [*PARTS_EMPTY, *FIELDS_EMPTY])
def test_accessors_read_a_missing_part_as_empty(
    read: Callable[[Any], Any], empty: Any, obj: dict[str, Any] | None
) -> None:
    assert read(obj) == empty


@pytest.mark.parametrize("obj", EMPTY_PARTS)
@pytest.mark.parametrize(("read", "empty"), FIELDS_EMPTY)
def test_accessors_read_a_missing_field_as_empty(
    read: Callable[[Any], Any], empty: Any, obj: dict[str, Any]
) -> None:
    assert read(obj) == empty


def test_spec_and_status_are_the_objects_own() -> None:
    """Not copies: a caller that copies before it writes says so with `dict(...)`."""
    pod = {"spec": {"a": 1}, "status": {"phase": "Running"}}
    assert spec_of(pod) is pod["spec"]
    assert status_of(pod) is pod["status"]


def test_labels_and_annotations_are_copies() -> None:
    pod: dict[str, Any] = {"metadata": {"labels": {"a": "1"}}}
    labels_of(pod)["b"] = "2"
    assert pod["metadata"]["labels"] == {"a": "1"}


def test_a_reference_controls_only_when_it_says_true() -> None:
    pod = {"metadata": {"ownerReferences": [{"uid": "x", "controller": "true"}, {"uid": "y"}]}}
    assert controller_uid(pod) is None


@pytest.mark.parametrize(
    ("container", "last", "terminated"),
    [
        ({"state": {"terminated": {"exitCode": 2}}}, False, {"exitCode": 2}),
        ({"lastState": {"terminated": {"finishedAt": "t"}}}, True, {"finishedAt": "t"}),
        ({"lastState": {"terminated": {"finishedAt": "t"}}}, False, {}),
        ({"state": {"running": {}}}, False, {}),
        ({"state": None}, False, {}),
        ({}, True, {}),
    ],
)
def test_terminated_state(container: dict[str, Any], last: bool, terminated: Any) -> None:
    assert terminated_state(container, last=last) == terminated


@pytest.mark.parametrize(
    ("container", "waiting"),
    [
        ({"state": {"waiting": {"reason": "ErrImagePull"}}}, {"reason": "ErrImagePull"}),
        ({"state": {"waiting": None}}, {}),
        ({"state": "x"}, {}),
        ({}, {}),
    ],
)
def test_waiting_state(container: dict[str, Any], waiting: Any) -> None:
    assert waiting_state(container) == waiting


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        (
            {"status": {"state": {"phase": "Running", "reason": "r"}}},
            {"phase": "Running", "reason": "r"},
        ),
        ({"status": {"state": None}}, {}),
        ({"status": {"state": "Running"}}, {}),
    ],
)
def test_job_state(obj: dict[str, Any], state: Any) -> None:
    assert job_state(obj) == state


@pytest.mark.parametrize(
    ("obj", "path", "value"),
    [
        ({"spec": {"a": {"b": 1}}}, ("spec", "a", "b"), 1),
        ({"spec": {"a": {"b": 1}}}, ("spec", "a"), {"b": 1}),
        ({"spec": {"a": None}}, ("spec", "a", "b"), None),
        ({"spec": {"a": [1]}}, ("spec", "a", "b"), None),
        ({"spec": "x"}, ("spec", "a"), None),
        (None, ("spec",), None),
        ({"spec": 1}, (), {"spec": 1}),
    ],
)
def test_dig(obj: dict[str, Any] | None, path: tuple[str, ...], value: Any) -> None:
    assert dig(obj, *path) == value


@pytest.mark.parametrize(
    ("obj", "phase"),
    [
        ({"status": {"phase": "Inqueue"}}, "Inqueue"),
        ({"status": {"phase": ""}}, ""),
        ({"status": {"phase": None}}, ""),
    ],
)
def test_status_phase(obj: dict[str, Any], phase: str) -> None:
    assert status_phase(obj) == phase
    assert pod_phase(obj) == (phase or "Pending")
