"""Choosing a container's log and cutting it as kubectl asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster.apiserver import errors
from localcluster.apiserver.podlogs import pick_container, run_files, tail

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}


@pytest.mark.parametrize(
    ("data", "lines", "limit", "cut"),
    [
        (b"1\n2\n3\n", None, None, b"1\n2\n3\n"),
        (b"1\n2\n3\n", 2, None, b"2\n3\n"),
        (b"1\n2\n3\n", 0, None, b""),
        (b"1\n2\n3\n", None, 3, b"1\n2"),
        (b"1\n2\n3", 1, None, b"3"),
    ],
)
def test_tail(data: bytes, lines: int | None, limit: int | None, cut: bytes) -> None:
    assert tail(data, lines, limit) == cut


def test_a_pod_of_several_containers_needs_one_named() -> None:
    assert pick_container(POD, "b") == "b"
    with pytest.raises(errors.StatusError, match=r"choose one of: \[a b\]"):
        pick_container(POD, "")
    with pytest.raises(errors.StatusError, match="container c is not valid for pod p"):
        pick_container(POD, "c")


def test_runs_are_ordered_by_restart(tmp_path: Path) -> None:
    for run in (10, 2, 1):
        (tmp_path / f"{run}.log").write_text("")
    assert [p.name for p in run_files(tmp_path)] == ["1.log", "2.log", "10.log"]
    assert run_files(tmp_path / "missing") == []
