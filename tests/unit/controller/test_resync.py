"""When the periodic resync re-plans a Job (`decide.resync`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.job.decide.model import PlanSettings
from controller.job.decide.resync import (
    CLUSTER_WIDE,
    FULL_RESYNC_PERIODS,
    Inputs,
    Settled,
    inputs_of,
    is_fixpoint,
    replans,
)

PERIOD = 30.0
SETTINGS = PlanSettings()


def obj(uid: str, version: str) -> dict[str, object]:
    return {"metadata": {"uid": uid, "resourceVersion": version}}


def test_inputs_are_the_versions_of_what_is_read() -> None:
    assert inputs_of([obj("j", "5"), obj("p", "7")], 3) == frozenset(
        {("j", "5"), ("p", "7"), (CLUSTER_WIDE, "3")}
    )
    assert inputs_of([obj("j", "5")], 3) != inputs_of([obj("j", "6")], 3)
    assert inputs_of([obj("j", "5")], 3) != inputs_of([obj("j", "5")], 4)
    assert inputs_of([obj("j", "5")], 3) != inputs_of([obj("j", "5"), obj("p", "1")], 3)


def test_a_queue_counts_by_what_it_says_to_its_jobs() -> None:
    def with_queue(found: dict[str, object] | None) -> Inputs:
        return inputs_of([obj("j", "5")], 0, queue=("q", found))

    open_queue = {"metadata": {"resourceVersion": "1"}, "status": {"state": "Open"}}
    busier = {"metadata": {"resourceVersion": "2"}, "status": {"state": "Open", "running": 3}}
    closed = {"metadata": {"resourceVersion": "3"}, "status": {"state": "Closed"}}
    assert with_queue(open_queue) == with_queue(busier)
    assert with_queue(open_queue) != with_queue(closed)
    assert with_queue(open_queue) != with_queue(None)
    assert with_queue({"status": {}}) != with_queue(None)


BEFORE: Inputs = inputs_of([obj("j", "5")], 0)
AFTER_A_WRITE: Inputs = inputs_of([obj("j", "6")], 0)

FIXPOINTS = [
    ("nothing changed", BEFORE, True, False, False, True),
    ("its own write changed an input", AFTER_A_WRITE, True, False, False, False),
    ("it changed what it remembers", BEFORE, False, False, False, False),
    ("it read the API (a PVC, a Queue) or made a key", BEFORE, True, True, False, False),
    ("it consumed pod deletions", BEFORE, True, False, True, False),
]


@pytest.mark.parametrize(
    ("what", "after", "memory_kept", "read_outside", "edges_taken", "expected"),
    FIXPOINTS,
    ids=[r[0] for r in FIXPOINTS],
)
def test_is_fixpoint(
    what: str,
    after: Inputs,
    memory_kept: bool,
    read_outside: bool,
    edges_taken: bool,
    expected: bool,
) -> None:
    assert (
        is_fixpoint(
            BEFORE,
            after,
            memory_kept=memory_kept,
            read_outside=read_outside,
            edges_taken=edges_taken,
        )
        is expected
    )


SETTLED = Settled(BEFORE, SETTINGS, at=100.0)
LIMIT = 100.0 + FULL_RESYNC_PERIODS * PERIOD

REPLANS = [
    ("never settled", None, BEFORE, SETTINGS, 101.0, True),
    ("settled, nothing changed", SETTLED, BEFORE, SETTINGS, 101.0, False),
    ("settled, an input changed", SETTLED, AFTER_A_WRITE, SETTINGS, 101.0, True),
    (
        "settled, the planner's settings changed (the native gang API appeared)",
        SETTLED,
        BEFORE,
        replace(SETTINGS, native_gang_served=True),
        101.0,
        True,
    ),
    ("settled, just short of the full resync", SETTLED, BEFORE, SETTINGS, LIMIT - 0.1, False),
    ("settled, due for the full resync", SETTLED, BEFORE, SETTINGS, LIMIT, True),
]


@pytest.mark.parametrize(
    ("what", "settled", "inputs", "settings", "now", "expected"),
    REPLANS,
    ids=[r[0] for r in REPLANS],
)
def test_replans(
    what: str,
    settled: Settled | None,
    inputs: Inputs,
    settings: PlanSettings,
    now: float,
    expected: bool,
) -> None:
    assert replans(settled, inputs, settings, now, PERIOD) is expected
