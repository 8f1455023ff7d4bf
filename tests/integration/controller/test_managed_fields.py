"""The controller caches objects without managedFields' field sets and writes from those
copies (a Job's status, a PodGroup resized on scale): kube-apiserver must keep every writer's
field set all the same, which it does only when a write leaves managedFields out (a body that
carries entries replaces them), and the cache must still tell who wrote a Job's status."""

from __future__ import annotations

import copy
from typing import Any

from controller.job.shell.runner import Controller
from kubeio.client import JOBS

Kubelet = Any


def entries(obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list(((obj or {}).get("metadata") or {}).get("managedFields") or [])


def owned_fields(obj: dict[str, Any] | None) -> set[str]:
    """The top two levels of every writer's field set, as `f:spec.f:minMember`."""
    owned: set[str] = set()
    for entry in entries(obj):
        for top, below in (entry.get("fieldsV1") or {}).items():
            owned.update(f"{top}.{field}" for field in below)
    return owned


def test_writes_from_the_slim_cache_keep_the_servers_field_sets(
    kubelet: Kubelet, controller: Controller, job_name: str
) -> None:
    kubelet.create_job(kubelet.make_job(job_name, [("worker", 1)]))
    kubelet.wait("a pod", lambda: len(kubelet.pods(job_name)) == 1)
    kubelet.admit(job_name)
    kubelet.run_all(job_name)
    kubelet.wait("Running", lambda: kubelet.phase(job_name) == "Running")
    assert "f:metadata.f:ownerReferences" in owned_fields(kubelet.pod_group(job_name))

    # Scaled up: the controller resizes the PodGroup with a PUT of its cached copy.
    up = copy.deepcopy(kubelet.job(job_name))
    up["spec"]["minAvailable"] = 2
    up["spec"]["tasks"][0].update(replicas=2, minAvailable=2)
    kubelet.kube.replace(JOBS, kubelet.namespace, up)
    kubelet.wait(
        "a gang of 2",
        lambda: ((kubelet.pod_group(job_name) or {}).get("spec") or {}).get("minMember") == 2,
    )
    # The fields set at the PodGroup's create are still owned, beside the one just changed.
    assert {"f:metadata.f:ownerReferences", "f:spec.f:minMember", "f:spec.f:queue"} <= (
        owned_fields(kubelet.pod_group(job_name))
    )

    on_server = entries(kubelet.job(job_name))
    status_entries = [e for e in on_server if e.get("subresource") == "status"]
    assert status_entries, on_server
    assert all("f:status" in (e.get("fieldsV1") or {}) for e in status_entries), on_server
    assert "f:spec.f:tasks" in owned_fields(kubelet.job(job_name))

    cached = controller.cache.job(f"{kubelet.namespace}/{job_name}")
    kept = entries(cached)
    assert kept and all("fieldsV1" not in e for e in kept), kept
    # Who wrote the status and when (what foreign-writer detection reads) is still cached.
    assert [(e["manager"], e.get("time")) for e in kept if e.get("subresource") == "status"] == [
        (e["manager"], e.get("time")) for e in status_entries
    ]
