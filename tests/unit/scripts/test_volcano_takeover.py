"""scripts/volcano-takeover's comparison of the objects before and after a switch of
controllers, from the objects Volcano v1.15.1's controller wrote (tests/data/volcano_takeover)."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def load() -> ModuleType:
    path = ROOT / "scripts" / "volcano_takeover.py"
    spec = importlib.util.spec_from_file_location("volcano_takeover", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("volcano_takeover", module)
    spec.loader.exec_module(module)
    return module


takeover = load()
RECORDED: list[dict[str, Any]] = json.loads(
    (ROOT / "tests" / "data" / "volcano_takeover" / "volcano-v1.15.1.json").read_text()
)["items"]


def named(items: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in items if o["kind"] == kind and o["metadata"]["name"] == name)


def test_nothing_changed() -> None:
    found = takeover.compare(RECORDED, copy.deepcopy(RECORDED))
    assert found.objects == 18
    assert (found.recreated, found.missing, found.phase_changed, found.start_moved) == (
        [],
        [],
        [],
        [],
    )


def test_a_recreated_pod_a_missing_service_a_phase_and_a_moved_start() -> None:
    after = copy.deepcopy(RECORDED)
    named(after, "Pod", "mpi-like-worker-0")["metadata"]["uid"] = "new"
    after.remove(named(after, "Service", "tf-like"))
    named(after, "Job", "tf-like")["status"]["state"]["phase"] = "Restarting"
    named(after, "Job", "mpi-like")["status"]["startTime"] = "2099-01-01T00:00:00Z"
    found = takeover.compare(RECORDED, after)
    assert found.recreated == ["Pod/mpi-like-worker-0"]
    assert found.missing == ["Service/tf-like"]
    assert found.phase_changed == ["tf-like: Running -> Restarting"]
    assert found.start_moved == ["mpi-like"]


def test_status_writes_reads_the_managed_fields() -> None:
    job = named(RECORDED, "Job", "mpi-like")
    assert takeover.status_writes(job, "vc-controller-manager") is not None
    assert takeover.status_writes(job, "vcjob-controller") is None
    assert takeover.status_writes(job, "kubectl-create") is None  # the spec, not the status
