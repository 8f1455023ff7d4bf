"""The local controllers' watches tell ADDED from MODIFIED by what they saw, like client-go's
informers (kubeio's reflector hands every ADDED and MODIFIED in as an upsert)."""

from __future__ import annotations

import threading
from typing import Any

from kubeio.client import Configuration
from localcluster.controllers.client import ClusterAccess, Resource
from localcluster.controllers.informer import ResourceWatch

PODS = Resource("", "v1", "pods", "Pod", True, frozenset({"list", "watch", "delete"}))


def obj(uid: str) -> dict[str, Any]:
    return {"metadata": {"name": uid, "namespace": "ns", "uid": uid}}


def test_event_types_follow_what_was_seen() -> None:
    seen: list[tuple[str, str]] = []
    synced: list[int] = []
    watch = ResourceWatch(
        ClusterAccess("https://127.0.0.1:1", Configuration()),
        PODS,
        lambda _r, items: synced.append(len(items)),
        lambda _r, kind, o: seen.append((kind, o["metadata"]["uid"])),
        threading.Event(),
    )
    watch.replace_all("Pod", [obj("a")])
    watch.upsert("Pod", obj("a"))
    watch.upsert("Pod", obj("b"))
    watch.upsert("Pod", obj("b"))
    watch.remove("Pod", obj("a"))
    watch.upsert("Pod", obj("a"))
    assert synced == [1]
    assert seen == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "b"),
        ("DELETED", "a"),
        ("ADDED", "a"),
    ]
