"""`controller.scaling`: the slots to create and the pods a scale-down removes."""

from __future__ import annotations

from typing import Any

import pytest

from controller.scaling import extra_pods, missing_indexes


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
    assert [p["metadata"]["name"] for p in extra_pods(pods, replicas)] == expected


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
