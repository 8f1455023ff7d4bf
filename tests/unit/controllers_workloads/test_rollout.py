"""Rollout arithmetic: fenceposts, how far the new and old ReplicaSets move, history pruning."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.controllers.workloads.objects import REVISION
from localcluster.controllers.workloads.rollout import (
    fenceposts,
    history_to_delete,
    new_replica_set_target,
    old_replica_set_targets,
    scaled_value,
)


def deployment(
    replicas: int = 4,
    *,
    surge: Any = "25%",
    unavailable: Any = "25%",
    strategy: str = "RollingUpdate",
    history: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "strategy": {"type": strategy}}
    if strategy == "RollingUpdate":
        spec["strategy"]["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    if history is not None:
        spec["revisionHistoryLimit"] = history
    return {"metadata": {"name": "web", "generation": 1}, "spec": spec}


def rs(
    name: str,
    replicas: int,
    available: int | None = None,
    *,
    created: str = "2026-01-01T00:00:00Z",
    revision: int = 1,
    current: int | None = None,
) -> dict[str, Any]:
    """A ReplicaSet that wants `replicas`, has `current` pods, `available` of them available."""
    count = replicas if current is None else current
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "generation": 1,
            "annotations": {REVISION: str(revision)},
        },
        "spec": {"replicas": replicas},
        "status": {
            "replicas": count,
            "availableReplicas": count if available is None else available,
            "observedGeneration": 1,
        },
    }


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        (3, 10, True, 3),
        ("25%", 10, True, 3),
        ("25%", 10, False, 2),
        ("25%", 2, True, 1),
        ("25%", 2, False, 0),
        ("100%", 3, False, 3),
        ("0%", 5, True, 0),
        ("2", 5, True, 2),
    ],
)
def test_scaled_value(value: Any, total: int, round_up: bool, expected: int) -> None:
    assert scaled_value(value, total, round_up=round_up) == expected


@pytest.mark.parametrize(
    ("d", "expected"),
    [
        (deployment(4), (1, 1)),
        (deployment(2), (1, 0)),
        (deployment(1, surge=0, unavailable="10%"), (0, 1)),  # never both zero
        (deployment(3, surge=1, unavailable=5), (1, 3)),  # at most every replica
        (deployment(0), (0, 0)),
        (deployment(3, strategy="Recreate"), (0, 0)),
    ],
)
def test_fenceposts(d: dict[str, Any], expected: tuple[int, int]) -> None:
    assert fenceposts(d) == expected


def test_a_first_rollout_creates_every_replica_at_once() -> None:
    assert new_replica_set_target(deployment(4), None, []) == 4


def test_a_new_template_starts_within_the_surge() -> None:
    assert new_replica_set_target(deployment(4), None, [rs("old", 4)]) == 1
    # Nothing to add while old and new already fill replicas + maxSurge.
    assert new_replica_set_target(deployment(4), rs("new", 1, 0), [rs("old", 4)]) == 1
    # Scaling down the new ReplicaSet is immediate.
    assert new_replica_set_target(deployment(2), rs("new", 5), []) == 2


def test_recreate_scales_old_replica_sets_to_zero_at_once() -> None:
    d = deployment(3, strategy="Recreate")
    assert old_replica_set_targets(d, None, [rs("a", 3), rs("b", 0)]) == {"a": 0}
    assert new_replica_set_target(d, rs("new", 0), [rs("a", 3)]) == 3


def test_old_replica_sets_wait_for_new_pods_to_become_available() -> None:
    d = deployment(2, surge=1, unavailable=0)
    assert old_replica_set_targets(d, rs("new", 1, available=0), [rs("old", 2)]) == {}
    assert old_replica_set_targets(d, rs("new", 1, available=1), [rs("old", 2)]) == {"old": 1}


def test_unhealthy_old_replicas_go_first_and_oldest_sets_before_newer() -> None:
    d = deployment(4, surge=1, unavailable=1)
    stuck = rs("stuck", 2, available=0, created="2026-01-01T00:00:02Z")
    oldest = rs("oldest", 2, created="2026-01-01T00:00:01Z")
    targets = old_replica_set_targets(d, rs("new", 1, available=1), [stuck, oldest])
    # 5 wanted - 3 min available - 0 new unavailable: two unhealthy replicas go at once;
    # then 3 available - 3 min available leaves nothing more to scale down.
    assert targets == {"stuck": 0}
    # 5 available - 3 min available: two replicas go, from the oldest ReplicaSet first.
    newer = rs("newer", 1, created="2026-01-01T00:00:03Z")
    targets = old_replica_set_targets(d, rs("new", 2, available=2), [newer, oldest])
    assert targets == {"oldest": 0}


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable"),
    [(2, "25%", "25%"), (4, "25%", "25%"), (3, 0, 1), (5, 2, 0), (10, "50%", "50%"), (1, 1, 0)],
)
def test_a_rolling_update_converges_within_its_bounds(
    replicas: int, surge: Any, unavailable: Any
) -> None:
    """Play the rollout like the controllers would, pods becoming available one sync later."""
    d = deployment(replicas, surge=surge, unavailable=unavailable)
    max_surge, max_unavailable = fenceposts(d)
    old = rs("old", replicas, created="2026-01-01T00:00:00Z")
    new = rs("new", new_replica_set_target(d, None, [old]), 0, created="2026-01-01T00:00:01Z")
    for _ in range(4 * replicas + 10):
        # Each ReplicaSet's pods match its spec, and become available by the next step.
        for item in (old, new):
            item["status"]["replicas"] = item["spec"]["replicas"]
            item["status"]["availableReplicas"] = item["spec"]["replicas"]
        target = new_replica_set_target(d, new, [old])
        if target != new["spec"]["replicas"]:
            new["spec"]["replicas"] = target
        else:
            old["spec"]["replicas"] = old_replica_set_targets(d, new, [old]).get(
                "old", old["spec"]["replicas"]
            )
        total = old["spec"]["replicas"] + new["spec"]["replicas"]
        available = old["status"]["availableReplicas"] + new["status"]["availableReplicas"]
        assert total <= replicas + max_surge
        assert available >= replicas - max_unavailable
        if new["spec"]["replicas"] == replicas and old["spec"]["replicas"] == 0:
            return
    raise AssertionError(f"no convergence: old {old['spec']}, new {new['spec']}")


def test_history_beyond_the_limit_goes_lowest_revision_first() -> None:
    old = [rs(f"r{n}", 0, revision=n) for n in (3, 1, 2)]
    assert [r["metadata"]["name"] for r in history_to_delete(deployment(history=1), old)] == [
        "r1",
        "r2",
    ]
    assert history_to_delete(deployment(), old) == []  # the default limit is 10


def test_history_keeps_replica_sets_that_still_have_pods() -> None:
    busy = rs("busy", 0, revision=1, current=1)
    wanted = rs("wanted", 1, revision=2)
    unobserved = rs("unobserved", 0, revision=3)
    unobserved["metadata"]["generation"] = 2
    done = rs("done", 0, revision=4)
    doomed = history_to_delete(deployment(history=0), [busy, wanted, unobserved, done])
    assert [r["metadata"]["name"] for r in doomed] == ["done"]
