"""The small controllers' Informer: with `keep`, it holds and reports only what it accepts."""

from __future__ import annotations

import threading
from typing import Any, cast

from controller.objectstore import Informer
from kubeio.client import JOBS
from kubeio.kubelike import KubeLike

Change = tuple[str | None, str | None]


def job(name: str, version: str, *, owned: bool) -> dict[str, Any]:
    refs = [{"kind": "CronJob", "name": "c", "controller": True}] if owned else []
    return {
        "metadata": {
            "namespace": "ns",
            "name": name,
            "resourceVersion": version,
            "ownerReferences": refs,
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}],
        }
    }


def owned(obj: dict[str, Any]) -> bool:
    return bool(obj["metadata"]["ownerReferences"])


def informer(changes: list[Change]) -> Informer:
    def on_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        changes.append(
            (
                old["metadata"]["resourceVersion"] if old else None,
                new["metadata"]["resourceVersion"] if new else None,
            )
        )

    # Never started: only the store is exercised, so no client is needed.
    return Informer(cast(KubeLike, None), JOBS, on_change, threading.Event(), keep=owned)


def test_only_kept_objects_are_held_and_reported() -> None:
    changes: list[Change] = []
    store = informer(changes)
    store.replace_all("Job", [job("a", "1", owned=True), job("b", "2", owned=False)])
    assert [o["metadata"]["name"] for o in store.items()] == ["a"]
    store.upsert("Job", job("c", "3", owned=False))
    store.remove("Job", job("c", "4", owned=False))
    assert changes == [(None, "1")]


def test_an_object_no_longer_kept_is_reported_deleted() -> None:
    changes: list[Change] = []
    store = informer(changes)
    store.upsert("Job", job("a", "1", owned=True))
    store.upsert("Job", job("a", "2", owned=False))
    assert store.get("ns/a") is None
    assert changes == [(None, "1"), ("1", None)]


def test_what_this_process_wrote_is_held_without_field_sets() -> None:
    store = informer([])
    store.put(job("a", "1", owned=True))
    store.put(job("b", "1", owned=False))
    assert [o["metadata"]["managedFields"] for o in store.items()] == [[{"manager": "m"}]]
