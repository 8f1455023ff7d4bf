"""Stored objects share their keys and short strings, and are otherwise the objects written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcluster.apiserver.storage import SHARED_STRING_MAX, Store, compact

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "main", "image": "busybox", "ports": [{"port": 80}]}]},
    "status": {"phase": "Running", "ready": True, "score": 0.5, "nothing": None},
}


def fresh(value: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(value))  # new string objects, as a decoded request has


@pytest.mark.parametrize(
    "value",
    [POD, [], {}, "x" * (SHARED_STRING_MAX + 1), 3, 2.5, None, True, [{"a": ["b", 1]}]],
)
def test_compact_keeps_the_value(value: Any) -> None:
    assert compact(value) == value


def test_compact_shares_keys_and_short_strings_but_not_long_ones() -> None:
    long = "y" * (SHARED_STRING_MAX + 1)
    one = compact(fresh({**POD, "note": long}))
    two = compact(fresh({**POD, "note": long}))
    assert one["status"]["phase"] is two["status"]["phase"]
    assert next(iter(one["spec"]["containers"][0])) is next(iter(two["spec"]["containers"][0]))
    assert one["note"] is not two["note"]


def test_put_stores_and_returns_an_equal_compacted_copy() -> None:
    store = Store()
    written = fresh(POD)
    stored = store.put(("", "pods"), written, "ADDED")
    assert stored == written
    assert stored["metadata"]["resourceVersion"] == "1"
    assert store.get(("", "pods"), "default", "p") is stored
    again = store.put(
        ("", "pods"), fresh({**POD, "metadata": {**POD["metadata"], "name": "q"}}), "ADDED"
    )
    assert again["status"]["phase"] is stored["status"]["phase"]
