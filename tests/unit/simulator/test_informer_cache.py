"""The simulator's caches take the answers of its own writes, but never go back in time."""

from __future__ import annotations

import threading
from typing import Any, cast

from localcluster.simulator.client import PODS, KubeClient
from localcluster.simulator.informer import Informer, object_key


def pod(version: str, phase: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "p", "resourceVersion": version},
        "status": {"phase": phase},
    }


def informer() -> Informer:
    # Never started: only the cache is exercised, so no client is needed.
    return Informer(cast(KubeClient, None), PODS, threading.Event())


def test_newer_objects_replace_older_ones() -> None:
    cache = informer()
    cache.observe(pod("5", "Pending"))
    cache.observe(pod("7", "Running"))
    assert cache.get("ns/p") == pod("7", "Running")


def test_older_objects_do_not_replace_newer_ones() -> None:
    cache = informer()
    cache.observe(pod("7", "Running"))
    cache.observe(pod("5", "Pending"))
    assert cache.get("ns/p") == pod("7", "Running")


def test_resource_versions_compare_as_numbers() -> None:
    cache = informer()
    cache.observe(pod("9", "Pending"))
    cache.observe(pod("10", "Running"))
    assert (cache.get("ns/p") or {})["status"]["phase"] == "Running"


def test_object_keys() -> None:
    assert object_key({"metadata": {"namespace": "ns", "name": "p"}}) == "ns/p"
    assert object_key({"metadata": {"name": "node-1"}}) == "node-1"


def test_a_late_answer_does_not_bring_back_a_deleted_object() -> None:
    cache = informer()
    cache.observe(pod("5", "Running"))
    with cache._lock:
        cache._objects.pop("ns/p")
        cache._tombstones["ns/p"] = 8
    cache.observe(pod("7", "Running"))
    assert cache.get("ns/p") is None
    cache.observe(pod("9", "Pending"))
    assert cache.get("ns/p") == pod("9", "Pending")


def test_a_relist_forgets_what_was_deleted_meanwhile_for_good() -> None:
    """After a 410 Gone the reflector lists again; an answer to one of our writes that was in
    flight must not bring back an object the list no longer has."""
    cache = informer()
    cache.observe(pod("5", "Running"))
    other = {"metadata": {"namespace": "ns", "name": "q", "resourceVersion": "12"}}
    cache.replace_all("Pod", [other])
    assert cache.get("ns/p") is None
    cache.observe(pod("7", "Succeeded"))
    assert cache.get("ns/p") is None
    cache.observe(pod("13", "Pending"))  # created again after the list
    assert cache.get("ns/p") == pod("13", "Pending")
