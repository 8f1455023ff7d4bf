"""Fixtures for the chart's end-to-end tests: the pinned helm against a local cluster."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from localcluster.running import LocalCluster, running_cluster

Helm = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """An API server alone: no webhook, controller or simulator (chart pods never run here)."""
    with running_cluster(
        tmp_path_factory.mktemp("cluster"), simulator=False, webhook=False, controller=False
    ) as local:
        yield local


@pytest.fixture
def helm(cluster: LocalCluster, tmp_path: Path) -> Helm:
    """Run the pinned helm against `cluster`, with its caches and config in tmp_path."""

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = cluster.helm(*args, home=tmp_path / "helm-home", check=False, timeout=120)
        if check and result.returncode != 0:
            pytest.fail(f"helm {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
        return result

    return run
