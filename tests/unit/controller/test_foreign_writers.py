"""Another controller writing a Job's status beside vcjob's: told from kube-apiserver's managed
fields, reported once per Job and writer."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.job.decide import foreignwriters
from controller.job.shell.foreignwatch import ForeignWriterWatch

STARTED = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
OWN = foreignwriters.OWN_MANAGER


def at(seconds: int) -> str:
    return (STARTED + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry(manager: str, seconds: int, subresource: str | None = "status") -> dict[str, Any]:
    found: dict[str, Any] = {"manager": manager, "operation": "Update", "time": at(seconds)}
    if subresource is not None:
        found["subresource"] = subresource
    return found


def job(*entries: dict[str, Any], uid: str = "u1", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "j", "namespace": "ns", "uid": uid, "managedFields": list(entries)},
        "spec": dict(spec),
    }


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ((), ()),
        ((entry(OWN, 5),), ()),  # vcjob's own writes
        ((entry("vc-controller-manager", -60),), ()),  # before vcjob's start: a takeover
        ((entry("vc-controller-manager", 0),), ("vc-controller-manager",)),
        ((entry("vc-controller-manager", 30), entry(OWN, 31)), ("vc-controller-manager",)),
        ((entry("kubectl-create", 30, subresource=None),), ()),  # the spec, not the status
        ((entry("b", 1), entry("a", 2)), ("a", "b")),
        (({"manager": "x", "subresource": "status"},), ()),  # no time: nothing to go by
    ],
)
def test_status_writers_since(
    entries: tuple[dict[str, Any], ...], expected: tuple[str, ...]
) -> None:
    assert foreignwriters.status_writers_since(job(*entries), (OWN,), STARTED) == expected


@pytest.mark.parametrize(
    ("written", "created", "expected"),
    [
        (30, 40, ()),  # carried in by the copy's create (MultiKueue on a worker cluster)
        (40, 40, ("kueue",)),  # written in the Job's first second
        (41, 40, ("kueue",)),
    ],
)
def test_status_writes_that_came_with_a_copy_do_not_count(
    written: int, created: int, expected: tuple[str, ...]
) -> None:
    copy = job(entry("kueue", written))
    copy["metadata"]["creationTimestamp"] = at(created)
    assert foreignwriters.status_writers_since(copy, {OWN}, STARTED) == expected


def test_the_warning_names_both_controllers() -> None:
    message = foreignwriters.warning("vc-controller-manager", OWN)
    assert "vc-controller-manager" in message and OWN in message


class Store:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def replace_all(self, kind: str, items: Iterable[dict[str, Any]]) -> set[str]:
        self.seen += [f"list {obj['metadata']['uid']}" for obj in items]
        return set()

    def upsert(self, kind: str, obj: dict[str, Any]) -> str | None:
        self.seen.append(f"upsert {obj['metadata']['uid']}")
        return None

    def remove(self, kind: str, obj: dict[str, Any]) -> str | None:
        self.seen.append(f"remove {obj['metadata']['uid']}")
        return None


def test_each_writer_is_reported_once_per_job_and_every_object_goes_on() -> None:
    reports: list[tuple[str, str]] = []
    store = Store()
    watch = ForeignWriterWatch(
        store, OWN, STARTED, lambda obj, manager: reports.append((obj["metadata"]["uid"], manager))
    )
    volcano = entry("vc-controller-manager", 10)
    watch.replace_all("Job", [job(volcano), job(uid="u2")])
    watch.upsert("Job", job(volcano, entry(OWN, 11)))
    watch.upsert("Job", job(volcano, entry("other", 12)))
    # Spec.managedBy names another controller: its status is not vcjob's to write.
    watch.upsert("Job", job(volcano, uid="u3", managedBy="kueue.x-k8s.io/multikueue"))
    # A Job deleted and created again under the same name is a new Job.
    watch.remove("Job", job(volcano))
    watch.upsert("Job", job(volcano, uid="u4"))
    assert reports == [
        ("u1", "vc-controller-manager"),
        ("u1", "other"),
        ("u4", "vc-controller-manager"),
    ]
    assert store.seen == [
        "list u1", "list u2", "upsert u1", "upsert u1", "upsert u3", "remove u1", "upsert u4"
    ]  # fmt: skip
