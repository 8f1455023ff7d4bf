"""Fault injection decisions: rate, kinds, reproducibility."""

from __future__ import annotations

import pytest

from localcluster.apiserver.faults import FaultInjector


def test_rate_zero_never_faults() -> None:
    injector = FaultInjector(0.0, seed=1)
    assert all(injector.pick(write=True) is None for _ in range(1000))
    assert injector.watch_cut_after() is None


def test_faults_follow_the_rate_and_conflicts_only_hit_writes() -> None:
    injector = FaultInjector(0.2, seed=3)
    reads = [injector.pick(write=False) for _ in range(5000)]
    writes = [injector.pick(write=True) for _ in range(5000)]
    assert 0.17 < sum(f is not None for f in reads) / 5000 < 0.23
    assert {f.kind for f in reads if f} == {"error", "hang"}
    assert {f.kind for f in writes if f} == {"error", "hang", "conflict"}


def test_same_seed_same_faults() -> None:
    first = [FaultInjector(0.5, seed=9).pick(True) for _ in range(1)]
    second = [FaultInjector(0.5, seed=9).pick(True) for _ in range(1)]
    assert first == second


def test_rate_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VCJOB_FAULT_RATE", "0.25")
    assert FaultInjector.rate_from_env() == 0.25
    monkeypatch.setenv("VCJOB_FAULT_RATE", "lots")
    with pytest.raises(ValueError, match="VCJOB_FAULT_RATE must be a number"):
        FaultInjector.rate_from_env()
    with pytest.raises(ValueError, match=r"between 0\.0 and 1\.0"):
        FaultInjector(1.5)
