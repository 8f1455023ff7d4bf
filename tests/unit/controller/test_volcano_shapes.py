"""Each shape of Job manifest in Volcano's example/ directory (our own manifests in
tests/data/volcano_shapes): admitted by the webhook as under Volcano, or denied at the documented
field for the invalid ones; the admitted ones run to Completed under the controller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import World

from shared.models import Queue
from webhook.job.create import validate_create
from webhook.job.defaulting import default_job
from webhook.settings import Settings

SHAPES = Path(__file__).resolve().parents[2] / "data" / "volcano_shapes"
VALID = sorted(SHAPES.glob("*.yaml"))
INVALID = sorted((SHAPES / "invalid").glob("*.yaml"))
DENIED_AT = "# denied-at: "


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def the_job(path: Path) -> dict[str, Any]:
    (job,) = [d for d in documents(path) if d["kind"] == "Job"]
    job["metadata"].setdefault("namespace", "default")
    job["metadata"]["uid"] = f"uid-{job['metadata']['name']}"
    job["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return job


class ShapeQueues:
    """`default` plus the Queues a shape file declares, all Open."""

    def __init__(self, path: Path) -> None:
        self.queues = {"default": Queue.from_wire({"metadata": {"name": "default"}})}
        for doc in documents(path):
            if doc["kind"] == "Queue":
                self.queues[doc["metadata"]["name"]] = Queue.from_wire(doc)

    def get(self, name: str) -> Queue | None:
        return self.queues.get(name)

    def children(self, name: str) -> list[str]:
        return sorted(n for n, q in self.queues.items() if q.spec.parent == name)


def test_every_shape_is_covered() -> None:
    assert len(VALID) >= 10
    assert len(INVALID) == 3


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_shape_is_admitted_and_runs_to_completed(path: Path) -> None:
    job = the_job(path)
    assert [str(e) for e in validate_create(job, ShapeQueues(path), Settings())] == []
    world = World(default_job(job, "volcano"))
    world.step()
    world.admit("Inqueue")
    world.step()
    world.step()  # a dependent task starts once what it depends on runs
    assert world.pods, "no pods were created"
    world.set_all("Running")
    world.step()
    world.step()
    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    world.set_all("Succeeded")
    world.settle()
    assert world.phase == "Completed"


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_shape_is_denied_at_its_field(path: Path) -> None:
    (at,) = [line[len(DENIED_AT) :] for line in path.read_text().splitlines() if DENIED_AT in line]
    found = validate_create(the_job(path), ShapeQueues(path), Settings())
    assert [str(e).split(":", 1)[0] for e in found] == [at]
