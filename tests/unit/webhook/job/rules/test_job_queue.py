"""The job's queue: exists, not root, Open, a leaf."""

from __future__ import annotations

from typing import Any

import pytest

from shared.models import Queue
from tests.unit.webhook.job.rules.jobspecs import SPEC, found, spec, task
from webhook.job.rules.job_queue import validate_queue


class Queues:
    def __init__(self, *queues: dict[str, Any]) -> None:
        self.queues = {q["metadata"]["name"]: Queue.from_wire(q) for q in queues}

    def get(self, name: str) -> Queue | None:
        return self.queues.get(name)

    def children(self, name: str) -> list[str]:
        return sorted(
            n for n, q in self.queues.items() if q.spec is not None and q.spec.parent == name
        )


def queue(name: str, state: str = "Open", parent: str | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"parent": parent} if parent else {},
        "status": {"state": state},
    }


QUEUES = Queues(
    queue("root"),
    queue("team", parent="root"),
    queue("leaf", parent="team"),
    queue("shut", state="Closed"),
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("leaf", [], id="open-leaf"),
        pytest.param(None, [], id="unset"),
        pytest.param("nope", [("spec.queue", "no Queue of this name exists")], id="missing"),
        pytest.param(
            "root", [("spec.queue", "jobs cannot be submitted to the root queue")], id="root"
        ),
        pytest.param(
            "shut",
            [("spec.queue", "the queue is Closed; jobs can only be submitted to an Open queue")],
            id="closed",
        ),
        pytest.param(
            "team",
            [
                (
                    "spec.queue",
                    "the queue has child queues (leaf); jobs can only be submitted to a leaf queue",
                )
            ],
            id="not-a-leaf",
        ),
    ],
)
def test_validate_queue(name: str | None, expected: list[tuple[str, str]]) -> None:
    fields = {"queue": name} if name else {}
    assert found(validate_queue(spec(task(), **fields), SPEC, QUEUES)) == expected
