"""`controller.job.decide.scaling`: the slots to create and the pods a scale-down removes."""

from __future__ import annotations

from typing import Any

import pytest

from controller.job.decide import podview
from controller.job.decide.scaling import (
    GangShape,
    SpecShape,
    extra_pods,
    missing_indexes,
    spec_update,
)


def pod(task: str, index: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"j-{task}-{index}",
            "labels": {"volcano.sh/task-spec": task, "volcano.sh/task-index": str(index)},
        }
    }


@pytest.mark.parametrize(
    ("pods", "replicas", "expected"),
    [
        ([pod("w", 0), pod("w", 1)], {"w": 2}, []),
        ([pod("w", 0), pod("w", 1), pod("w", 2)], {"w": 1}, ["j-w-2", "j-w-1"]),
        ([pod("gone", 0), pod("w", 0)], {"w": 1}, ["j-gone-0"]),
        ([pod("w", 0)], {"w": 0}, ["j-w-0"]),
    ],
    ids=["in range", "highest index first", "removed task", "scaled to zero"],
)
def test_extra_pods(pods: list[Any], replicas: dict[str, int], expected: list[str]) -> None:
    read = [podview.read(p) for p in pods]
    assert [p.name for p in extra_pods(read, replicas)] == expected


@pytest.mark.parametrize(
    ("replicas", "existing", "succeeded", "expected"),
    [
        (3, set(), set(), [0, 1, 2]),
        (3, {"j-w-1"}, set(), [0, 2]),
        (3, set(), {0}, [1, 2]),
        (0, set(), set(), []),
    ],
    ids=["all missing", "one exists", "a recorded success is not rerun", "no replicas"],
)
def test_missing_indexes(
    replicas: int, existing: set[str], succeeded: set[int], expected: list[int]
) -> None:
    assert missing_indexes("j", "w", replicas, existing, succeeded) == expected


def shape(min_available: int, **replicas: int) -> SpecShape:
    return {"minAvailable": min_available, "replicas": dict(replicas)}


def gang(min_member: int, **tasks: int) -> GangShape:
    return {"minMember": min_member, "minTaskMember": dict(tasks)}


@pytest.mark.parametrize(
    ("last", "new", "acted_gang", "new_gang", "expected"),
    [
        (shape(2, w=2), shape(2, w=2), gang(2, w=2), gang(2, w=2), None),
        (shape(2, w=2), shape(2, w=3), gang(2, w=2), gang(2, w=3), "task w replicas 2 -> 3"),
        (
            shape(2, w=2),
            shape(3, w=4),
            None,
            gang(3, w=4),
            "minAvailable 2 -> 3, task w replicas 2 -> 4",
        ),
        (shape(1, a=1, b=1), shape(1, a=1), None, gang(1, a=1), "task b replicas 1 -> 0"),
        (None, shape(2, w=2), gang(2, w=2), gang(2, w=2), None),
        (None, shape(2, w=2), None, gang(2, w=2), None),
        (
            None,
            shape(3, w=3),
            gang(2, w=2),
            gang(3, w=3),
            "minAvailable 2 -> 3, task w minAvailable 2 -> 3",
        ),
    ],
    ids=[
        "same shape (a status write, a restart of the job)",
        "replicas patched",
        "minAvailable and replicas edited",
        "task removed",
        "controller restarted, PodGroup already acted on",
        "controller restarted, no PodGroup (new or restarting job)",
        "controller restarted before acting on a change",
    ],
)
def test_spec_update(
    last: SpecShape | None,
    new: SpecShape,
    acted_gang: GangShape | None,
    new_gang: GangShape,
    expected: str | None,
) -> None:
    assert spec_update(last, new, acted_gang, new_gang) == expected
