"""The seeded Philly-shaped trace: distributions, scaling and the checked-in file."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from tests.unit.bench.conftest import load

philly = load("philly_trace")


def test_gpu_demand_follows_the_published_shares() -> None:
    rng = random.Random(1)
    counts = Counter(philly.gpu_demand(rng) for _ in range(20000))
    for gpus, share in philly.GPU_DEMAND:
        assert counts[gpus] / 20000 == pytest.approx(share, abs=0.015)


def test_durations_span_the_published_range() -> None:
    rng = random.Random(2)
    minutes = [philly.philly_minutes(rng) for _ in range(5000)]
    assert min(minutes) >= 10**1.5 and max(minutes) <= 10**4
    long_share = sum(m > 1000 for m in minutes) / len(minutes)
    assert long_share == pytest.approx(0.2, abs=0.02)


@pytest.mark.parametrize(
    ("minutes", "seconds"), [(10**1.5, 11.2), (100.0, 20.0), (960.0, 62.0), (10**4, 200.0)]
)
def test_scaled_seconds(minutes: float, seconds: float) -> None:
    assert philly.scaled_seconds(minutes) == pytest.approx(seconds, abs=0.05)


@pytest.mark.parametrize(("seconds", "replicas", "work"), [(10.0, 1, 10.0), (10.0, 4, 34.8)])
def test_work_is_what_the_requested_workers_do(seconds: float, replicas: int, work: float) -> None:
    assert philly.work_for(seconds, replicas) == pytest.approx(work)


@pytest.mark.parametrize(
    ("minutes", "pause"),
    [(10**1.5, 0.5), (10**4, 0.5), (4.0, 1.0), (1.0, 2.0)],  # Philly's shortest is 32 minutes
)
def test_resize_pause_is_a_minute_compressed_like_the_job(minutes: float, pause: float) -> None:
    assert philly.resize_pause(minutes) == pytest.approx(pause)


def test_generate_is_seeded_and_sane() -> None:
    trace = philly.generate(60, seed=14)
    assert trace == philly.generate(60, seed=14)
    assert trace != philly.generate(60, seed=15)
    submits = [job["submit"] for job in trace]
    assert submits == sorted(submits) and submits[0] == 0.0
    for job in trace:
        if job["elastic"]:
            assert job["gpus"] < job["max_replicas"] <= philly.MAX_REPLICAS
        else:
            assert job["max_replicas"] == job["gpus"]


def test_the_checked_in_traces_are_seed_14() -> None:
    assert json.loads(philly.TRACE.read_text()) == philly.generate(60, seed=14)
    busy = philly.TRACE.with_name("philly-60-busy.json")
    assert json.loads(busy.read_text()) == philly.generate(60, seed=14, rate=0.6)
    medium = philly.TRACE.with_name("philly-60-medium.json")
    assert json.loads(medium.read_text()) == philly.generate(60, seed=14, rate=0.45)
    heavy = philly.TRACE.with_name("philly-60-heavy.json")
    assert json.loads(heavy.read_text()) == philly.generate(60, seed=14, rate=1.0)
